import ReachdModel

/// Everything the scheduler keeps about one job, and the rules that move it: events in, actions out.
/// The job record and its bookkeeping (the running attempt, its stop intent, the size probe, checkpoints)
/// live here together, so dropping the machine drops all of it. Pure: the clock and the jitter come in
/// with each event (`JobMoment`); files, network, store and watchers are the shell's, driven by `JobAction`s.
public struct JobMachine: Sendable {
    /// Why the scheduler stopped a running transfer; applied when its attempt ends.
    public enum StopIntent: Hashable, Sendable {
        case pause, cancel
        case deferral(String)
    }

    /// What an attempt that has ended still waits for before its slot is free.
    public enum Finishing: Hashable, Sendable {
        /// The digest of the complete partial file.
        case digest
        /// The complete file being moved into place.
        case move
        /// The size of the file in place, after a 304.
        case output
        /// The partial file of a failed download being removed; the failure is stored after, so the job can
        /// neither start again nor show as finished while its old file is still being removed.
        case removal(ending: Job)
    }

    /// The running transfer's bookkeeping; nil when no transfer task runs.
    public struct Attempt: Hashable, Sendable {
        public var intent: StopIntent?
        /// Bytes arrived in this attempt (so a failure afterwards starts the backoff afresh).
        public var progressed = false
        /// The last progress written to the store: bytes and monotonic seconds.
        public var checkpointBytes: Int64
        public var checkpointSeconds: Double
        /// The job was a refresh check when the attempt ended.
        public var refreshing = false
        public var finishing: Finishing?
    }

    public internal(set) var job: Job
    public internal(set) var attempt: Attempt?
    /// A size probe (HEAD) is under way.
    public internal(set) var probing = false
    /// The server was asked for the size since the last refresh check began.
    public internal(set) var sizeChecked = false
    /// Monotonic seconds of the last event to watchers.
    public internal(set) var lastEventSeconds: Double?
    /// When the job's constraints may decide otherwise with the clock alone (a window's edge, not-before, the deadline).
    public internal(set) var timeEdge: Timestamp?
    let rules: JobRules

    /// The moment of the event being handled, and the actions it produced so far.
    var moment = JobMoment(now: Timestamp(microseconds: 0), monotonic: 0, jitter: 0)
    var actions: [JobAction] = []

    public init(_ job: Job, rules: JobRules) {
        self.job = job
        self.rules = rules
    }

    public var id: String { job.id }

    /// A finished job: completed (and not kept fresh), failed or cancelled. Expiry and `clean` drop these.
    public var isFinished: Bool { job.state.isTerminal && !(job.state == .completed && job.refreshSeconds != nil) }

    /// When the job wants to be reconsidered: a retry's time, a constraint's time edge, or a completed job's next
    /// refresh check.
    public var wakeAt: Timestamp? {
        if job.state == .completed { return job.nextCheck }
        guard !job.state.isTerminal && job.state != .paused else { return nil }
        return [job.retryAt, timeEdge].compactMap { $0 }.min()
    }

    /// The transfer may go on with `total` bytes on `route` at `now` (asked by the fetcher once the size is known).
    public func allows(total: Int64?, route: JobRoute, at now: Timestamp) -> Bool {
        guard attempt?.intent == nil else { return false }
        return decision(route: route, size: total, sizeChecked: true, now: now) == .run
    }

    /// Handles one event at `moment`; returns what the shell must do, in order.
    public mutating func handle(_ event: JobEvent, at moment: JobMoment) -> [JobAction] {
        self.moment = moment
        actions = []
        switch event {
        case .recovered(let partialSize): recover(partialSize: partialSize)
        case .added:
            notify(job)
            actions.append(.watchHost)
        case .pause: pause()
        case .resume: resume()
        case .refresh: refresh()
        case .cancel: cancel()
        case .remove: remove()
        case .shutdown: stop(.deferral("deferred: reachd-transfers stopped"))
        case .reevaluate(let route): reevaluate(route)
        case .start: start()
        case .attemptStarted(let offset, let total, let validators): attemptStarted(offset: offset, total: total, validators: validators)
        case .uploadOpened(let size):
            var next = job
            next.bytesTotal = size
            update(next)
        case .progressed(let bytes): progressed(bytes)
        case .attemptEnded(let outcome, let partialSize): attemptEnded(outcome, partialSize: partialSize)
        case .digestComputed(let digest): digestComputed(digest)
        case .movedIntoPlace(let failure): movedIntoPlace(failure)
        case .outputMeasured(let size): outputMeasured(size)
        case .partialRemoved: partialRemoved()
        case .sizeProbed(let size): sizeProbed(size)
        }
        defer { actions = [] }
        return actions
    }

    /// The gate's decision on `route`; a refresh check is its own size probe (a 304 costs nothing, a large
    /// new body is stopped at its head).
    func decision(route: JobRoute, size: Int64?, sizeChecked: Bool, now: Timestamp) -> TransferGate.Decision {
        let decision = rules.gate.decide(job: job, route: route, size: size, sizeChecked: sizeChecked, now: now, zone: rules.zone)
        if case .needSize = decision, job.isRefreshing { return .run }
        return decision
    }

    /// Records a changed job: stored (with its change time), counted when its state moved, told to watchers.
    mutating func update(_ changed: Job) {
        guard changed != job else { return }
        var next = changed
        next.updated = moment.now
        let stateMoved = next.state != job.state
        job = next
        if stateMoved { actions.append(.stateChanged(next)) }
        actions.append(.persist(next))
        notify(next)
    }

    mutating func notify(_ job: Job) {
        lastEventSeconds = moment.monotonic
        actions.append(.notify(job))
    }

    /// The crash recovery of a stored job: a transfer that was running is queued again from what its
    /// partial file holds (nothing stored: the size on disk is the truth).
    private mutating func recover(partialSize: Int64) {
        guard !job.state.isTerminal else { return }
        if job.state == .running { job.state = .queued }
        job.bytesReceived = partialSize
        if partialSize == 0 { job.validators = Validators() }
    }

    /// Stops the running transfer for `intent` (the outcome is applied when its attempt ends).
    mutating func stop(_ intent: StopIntent) {
        guard attempt != nil else { return }
        attempt?.intent = intent
        actions.append(.stopAttempt)
    }
}
