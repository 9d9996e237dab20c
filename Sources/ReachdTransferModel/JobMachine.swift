import ReachdModel

/// Everything the scheduler keeps about one job, and the rules that move it: events in, actions out.
/// The job record and its life (`Life`: the phase, with its own bookkeeping: the running transfer's stop intent
/// and checkpoints, the finishing step) live here together, so dropping the machine drops all of it. Pure: the
/// clock and the jitter come in with each event (`JobMoment`); files, network, store and watchers are the shell's,
/// driven by `JobAction`s.
public struct JobMachine: Sendable {
    /// The job as stored and shown; its `state` is always its life's (set only through `life`).
    public internal(set) var job: Job
    /// Where the job is in its life, with the data of that phase.
    public internal(set) var life: Life { didSet { job.state = life.state } }
    /// Whether the server was asked for the size since the last refresh check began.
    public internal(set) var sizeQuestion = SizeQuestion.unasked
    /// Monotonic seconds of the last event to watchers.
    public internal(set) var lastEventSeconds: Double?
    /// When the job's constraints may decide otherwise with the clock alone (a window's edge, not-before, the deadline).
    public internal(set) var timeEdge: Timestamp?
    let rules: JobRules

    /// The moment of the event being handled, and the actions it produced so far.
    var moment = JobMoment(now: Timestamp(microseconds: 0), monotonic: 0, jitter: 0)
    var actions: [JobAction] = []

    /// The machine of a stored or new job; no transfer runs yet (a stored `running` job is queued again).
    public init(_ job: Job, rules: JobRules) {
        self.init(job, life: Life(stored: job.state), rules: rules)
    }

    /// A machine in `life` (the transition tables start from any).
    init(_ job: Job, life: Life, sizeQuestion: SizeQuestion = .unasked, rules: JobRules) {
        self.job = job
        self.job.state = life.state
        self.life = life
        self.sizeQuestion = sizeQuestion
        self.rules = rules
    }

    public var id: String { job.id }

    /// A finished job: completed (and not kept fresh), failed or cancelled. Expiry and `clean` drop these.
    public var isFinished: Bool { job.state.isTerminal && !(job.state == .completed && job.download?.refreshSeconds != nil) }

    /// When the job wants to be reconsidered: a retry's time, a constraint's time edge, or a completed job's next
    /// refresh check.
    public var wakeAt: Timestamp? {
        if job.state == .completed { return job.nextCheck }
        guard !job.state.isTerminal && job.state != .paused else { return nil }
        guard let retryAt = job.retryAt, let timeEdge else { return job.retryAt ?? timeEdge }
        return min(retryAt, timeEdge)
    }

    /// The transfer may go on with `total` bytes on `route` at `now` (asked by the fetcher once the size is known).
    public func allows(total: Int64?, route: JobRoute, at now: Timestamp) -> Bool {
        guard !life.stopAsked else { return false }
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
        case .capRate(let rate): capRate(rate)
        case .proxyChosen(let proxy):
            var next = job
            next.viaProxy = proxy
            update(next)
        case .cancel: cancel()
        case .remove: remove()
        case .shutdown: stop(.deferral("deferred: reachd-transfers stopped"))
        case .machineSleeps: stop(.deferral("deferred: the machine went to sleep"))
        case .reevaluate(let route): reevaluate(route)
        case .start: start()
        case .attemptStarted(let offset, let total, let validators): attemptStarted(offset: offset, total: total, validators: validators)
        case .uploadOpened(let size):
            var next = job
            next.bytesTotal = size
            update(next)
        case .progressed(let bytes, let yielding): progressed(bytes, yielding: yielding)
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

    /// Moves the job into `next` life (when given) with the record `changed`: stored (with its change time),
    /// counted when its state moved, told to watchers. The record's state is the life's.
    mutating func update(_ changed: Job, life next: Life? = nil) {
        let before = job
        if let next { life = next }
        var record = changed
        record.state = life.state
        guard record != before else { return }
        record.updated = moment.now
        job = record
        if record.state != before.state { actions.append(.stateChanged(record)) }
        actions.append(.persist(record))
        notify(record)
    }

    mutating func notify(_ job: Job) {
        lastEventSeconds = moment.monotonic
        actions.append(.notify(job))
    }

    /// The crash recovery of a stored job: one that was running (queued again by `init`) goes on from what its
    /// partial file holds (nothing stored: the size on disk is the truth).
    private mutating func recover(partialSize: Int64) {
        guard !job.state.isTerminal else { return }
        job.bytesMoved = partialSize
        if partialSize == 0 { job.changeDownload { $0.partial = Validators() } }
    }

    /// Stops the running transfer for `intent` (the outcome is applied when it ends). A deferral (the route, the
    /// constraints, the service stopping) does not replace its owner's pause or cancel, which stand.
    mutating func stop(_ intent: StopIntent) {
        switch life {
        case .transferring(var transfer):
            if intent.word != nil || transfer.stop?.word == nil { transfer.stop = intent }
            life = .transferring(transfer)
        case .finishing(var finish):
            finish.stopAsked = true
            life = .finishing(finish)
        default: return
        }
        actions.append(.stopAttempt)
    }
}
