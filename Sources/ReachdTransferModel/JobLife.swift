/// A job's life in its machine: one case per phase, each carrying the data only that phase has, so that no
/// two facts can contradict each other (a transfer task for a finished job, a stop asked of no transfer, a
/// finishing step outside an attempt). The job's `state`, as the store and the wire see it, is derived from it.
extension JobMachine {
    public enum Life: Hashable, Sendable {
        /// Allowed to run, waiting for a free slot.
        case queued
        /// Held back by its route, its constraints or a retry's time (the record's `reason` and `retryAt` say which).
        case deferred
        /// Paused by its owner; only `resume` moves it on.
        case paused
        /// A transfer task runs.
        case transferring(Transfer)
        /// The transfer is over; the attempt keeps its slot until the file is checked, moved, measured or removed.
        case finishing(Finish)
        case completed
        case failed
        case cancelled

        /// The life of a job read from the store or just added: no transfer task runs yet, so a stored `running`
        /// (the service stopped without saying) is queued again.
        init(stored state: JobState) {
            switch state {
            case .queued, .running: self = .queued
            case .deferred: self = .deferred
            case .paused: self = .paused
            case .completed: self = .completed
            case .failed: self = .failed
            case .cancelled: self = .cancelled
            }
        }

        /// The state the store and the wire see: during an attempt, what its owner said meanwhile (else running).
        public var state: JobState {
            switch self {
            case .queued: .queued
            case .deferred: .deferred
            case .paused: .paused
            case .transferring(let transfer): transfer.stop?.word?.state ?? .running
            case .finishing(let finish): finish.word?.state ?? .running
            case .completed: .completed
            case .failed: .failed
            case .cancelled: .cancelled
            }
        }

        /// An attempt holds the job's slot (a transfer task runs or finishes).
        public var holdsSlot: Bool {
            switch self {
            case .transferring, .finishing: true
            default: false
            }
        }

        /// This life once its owner said `word`: an idle job takes it at once; an attempt is asked to stop (unless
        /// resumed) and shows the word until it is over.
        func told(_ word: OwnerWord) -> Life {
            switch self {
            case .transferring(var transfer):
                transfer.stop = switch word {
                case .paused: .pause
                case .resumed: .pauseThenResume
                case .cancelled: .cancel
                }
                return .transferring(transfer)
            case .finishing(var finish):
                finish.word = word
                finish.stopAsked = finish.stopAsked || word != .resumed
                return .finishing(finish)
            default:
                return Life(stored: word.state)
            }
        }

        /// A stop was asked of the running attempt.
        var stopAsked: Bool {
            switch self {
            case .transferring(let transfer): transfer.stop != nil
            case .finishing(let finish): finish.stopAsked
            default: false
            }
        }

        /// The running transfer, if one runs.
        public var transfer: Transfer? {
            if case .transferring(let transfer) = self { transfer } else { nil }
        }
    }

    /// A running transfer's bookkeeping.
    public struct Transfer: Hashable, Sendable {
        /// Why the transfer is being stopped (nil: it goes on); applied when it ends.
        public var stop: StopIntent?
        /// Bytes arrived in this attempt (so a failure afterwards starts the backoff afresh).
        public var progressed = false
        /// The last progress written to the store: bytes and monotonic seconds.
        public var checkpointBytes: Int64
        public var checkpointSeconds: Double
        /// The progress the rate was last measured from: bytes (nil: none yet) and monotonic seconds.
        public var rateBytes: Int64?
        public var rateSeconds: Double = 0
    }

    /// Why the scheduler stops a running transfer, and so what the job shows until it has stopped.
    public enum StopIntent: Hashable, Sendable {
        /// Its owner paused it: it shows paused, and ends paused.
        case pause
        /// Its owner paused it, then resumed it before it stopped: it shows queued, and ends paused (its task was told to stop).
        case pauseThenResume
        /// Its owner cancelled it: it shows cancelled, and a download's partial file goes when it ends.
        case cancel
        /// Its route or constraints no longer allow it, or the service stops: it shows running, then deferred for this reason.
        case deferral(String)

        /// What its owner said, if the stop is the owner's.
        var word: OwnerWord? {
            switch self {
            case .pause: .paused
            case .pauseThenResume: .resumed
            case .cancel: .cancelled
            case .deferral: nil
            }
        }
    }

    /// What its owner said to a job while its attempt runs; the job shows it until the attempt is over.
    public enum OwnerWord: Hashable, Sendable {
        case paused
        /// Paused, then resumed.
        case resumed
        case cancelled

        var state: JobState {
            switch self {
            case .paused: .paused
            case .resumed: .queued
            case .cancelled: .cancelled
            }
        }
    }

    /// An ended transfer's attempt, finishing before its slot is free.
    public struct Finish: Hashable, Sendable {
        public var step: Finishing
        /// The job was a refresh check when its transfer ended.
        public var refreshing: Bool
        /// What its owner said since the transfer started (nil: nothing; it shows running).
        public var word: OwnerWord?
        /// A stop was asked since the transfer ended (nothing is left to stop: the scheduler is told once).
        public var stopAsked = false
    }

    /// What an attempt whose transfer has ended still waits for before its slot is free.
    public enum Finishing: Hashable, Sendable {
        /// The digest of the complete partial file.
        case digest
        /// The complete file being moved into place.
        case move
        /// The size of the file in place, after a 304.
        case output
        /// The partial file of a failed download being removed; the failed job is stored after, so the job can
        /// neither start again nor show as finished while its old file is still being removed.
        case removal(failed: Job)
    }

    /// Whether the server was asked for the job's size since its last refresh check began. The HEAD request runs
    /// beside the job's life (its answer may come in any phase), so this is kept apart from it.
    public enum SizeQuestion: Hashable, Sendable {
        case unasked
        /// A size probe (HEAD) is under way.
        case asking
        /// The server answered (an unknown size after asking counts as large).
        case answered
    }
}
