import ReachdModel

/// What happens to one job, fed to its `JobMachine`.
public enum JobEvent: Sendable {
    /// The job was read from the store at start; an unfinished one's partial file holds `partialSize` bytes.
    case recovered(partialSize: Int64)
    /// A new job was stored.
    case added
    case pause
    case resume
    case refresh
    case cancel
    /// The owner asks to drop a finished job.
    case remove
    /// The service is stopping: a running transfer stops, its partial file stays.
    case shutdown
    /// Re-decide the job against its route and the clock: a verdict changed, a timer fired, another job ended.
    case reevaluate(JobRoute)
    /// The queue gave the job a free slot.
    case start
    /// The server answered: the transfer starts at `offset` of `total` bytes, of the version `validators` name.
    case attemptStarted(offset: Int64, total: Int64?, validators: Validators)
    /// An upload's file was opened: `size` bytes to send.
    case uploadOpened(size: Int64)
    /// `bytes` have arrived (a download) or been sent (an upload) in this attempt.
    case progressed(bytes: Int64)
    /// The attempt ended; a download's partial file now holds `partialSize` bytes.
    case attemptEnded(FetchOutcome, partialSize: Int64)
    /// The SHA-256 of a complete partial file, or why it could not be read.
    case digestComputed(Result<String, JobFailure>)
    /// The complete file was moved into place, or why it was not.
    case movedIntoPlace(JobFailure?)
    /// The size of the file in place (after a 304).
    case outputMeasured(Int64)
    /// The server's answer to a size probe (nil: it did not say).
    case sizeProbed(Int64?)
}

/// Why a file operation failed, as a job's reason shows it.
public struct JobFailure: Error, Hashable, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// What the shell around a `JobMachine` must do, in order.
public enum JobAction: Hashable, Sendable {
    /// Write the job to the store.
    case persist(Job)
    /// Tell the job's watchers.
    case notify(Job)
    /// The job changed state (the metrics count it).
    case stateChanged(Job)
    /// Start a transfer task for the job.
    case startAttempt
    /// Cancel the running transfer task (its intent is kept in the machine).
    case stopAttempt
    /// Ask the server for the size (HEAD), then feed `sizeProbed`.
    case probeSize
    /// Compute the SHA-256 of the partial file, then feed `digestComputed`.
    case verifyDigest
    /// Move the complete partial file into place, then feed `movedIntoPlace`.
    case moveIntoPlace
    /// Delete the partial file.
    case removePartial
    /// Measure the file in place, then feed `outputMeasured`.
    case measureOutput
    /// Follow (or stop following) the verdict for the job's host.
    case watchHost
    case unwatchHost
    /// The transfer task is over: its slot is free.
    case attemptOver
    /// Re-decide the whole queue.
    case reschedule
    /// Drop the job from the store and the table.
    case forget
    /// Metrics: a retry, a refresh check's result, bytes moved.
    case countRetry
    case countRefresh(RefreshResult)
    case countTransferred(bytes: Int64, upload: Bool)
    /// An informational log line.
    case log(String, metadata: [String: String])
    /// The owner's operation is refused (a conflict); nothing changed.
    case refuse(String)
}

/// How a refresh check ended, as the metrics count it.
public enum RefreshResult: String, Hashable, Sendable, CaseIterable {
    case notModified = "not_modified", changed, failed
}

/// The job's host and the verdict last heard for it (nil: none yet).
public struct JobRoute: Hashable, Sendable {
    public var host: String
    public var verdict: Verdict?

    public init(host: String, verdict: Verdict?) {
        self.host = host
        self.verdict = verdict
    }
}

/// The clock and the randomness one event sees, passed in so the machine stays pure.
public struct JobMoment: Hashable, Sendable {
    /// Wall-clock time: job timestamps, retry and refresh times.
    public var now: Timestamp
    /// Monotonic seconds: checkpoint and event pacing.
    public var monotonic: Double
    /// In 0...1: spreads retry delays (RetryPolicy).
    public var jitter: Double

    public init(now: Timestamp, monotonic: Double, jitter: Double) {
        self.now = now
        self.monotonic = monotonic
        self.jitter = jitter
    }
}

/// The settings every job machine follows.
public struct JobRules: Hashable, Sendable {
    public var gate: TransferGate
    public var retry: RetryPolicy
    public var checkpoint: ProgressCheckpoint
    /// Progress events to watchers at most this often per job.
    public var eventIntervalSeconds: Double

    public init(gate: TransferGate = TransferGate(), retry: RetryPolicy = RetryPolicy(), checkpoint: ProgressCheckpoint = ProgressCheckpoint(),
                eventIntervalSeconds: Double = 0.25) {
        self.gate = gate
        self.retry = retry
        self.checkpoint = checkpoint
        self.eventIntervalSeconds = eventIntervalSeconds
    }
}
