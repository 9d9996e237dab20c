import ReachdModel

/// The owner's operations and the scheduling decision for one job.
extension JobMachine {
    mutating func pause() {
        guard !job.state.isTerminal else { return refuse("job \(id) is \(job.state.rawValue)") }
        var next = job
        next.reason = "paused by its owner; reachctl download resume \(id) continues it"
        update(next, life: life.told(.paused))
        if life.holdsSlot { actions.append(.stopAttempt) }
    }

    mutating func resume() {
        switch job.state {
        case .completed, .cancelled: refuse("job \(id) is \(job.state.rawValue)")
        case .running, .queued: break
        case .paused, .deferred, .failed:
            var next = job
            next.reason = nil
            next.attempts = 0
            next.retryAt = nil
            update(next, life: life.told(.resumed))
            actions += [.watchHost, .reschedule]
        }
    }

    /// Checks a completed download's file against the server now.
    mutating func refresh() {
        guard !job.isUpload else { return refuse("job \(id) is an upload; only downloads are refreshed") }
        if job.isRefreshing { return }
        guard job.state == .completed else {
            return refuse("job \(id) is \(job.state.rawValue); only a completed download can be refreshed")
        }
        var next = job
        let now = moment.now
        next.changeDownload { $0.nextCheck = now }
        update(next)
        actions += [.watchHost, .reschedule]
    }

    /// Cancels: a running transfer is stopped (its partial file goes when it ends), an idle one's partial file goes now.
    mutating func cancel() {
        guard !job.state.isTerminal else { return refuse("job \(id) is already \(job.state.rawValue)") }
        var next = job
        next.reason = "cancelled by its owner"
        update(next, life: life.told(.cancelled))
        actions.append(.unwatchHost)
        if life.holdsSlot {
            actions.append(.stopAttempt)
        } else if !job.isUpload {
            actions.append(.removePartial)
        }
    }

    mutating func remove() {
        guard job.state.isTerminal else { return refuse("job \(id) is \(job.state.rawValue); cancel it first, then remove it") }
        actions.append(.forget)
    }

    private mutating func refuse(_ why: String) { actions = [.refuse(why)] }

    /// The owner's new cap for the job (nil: none of its own); a finished job has none to change.
    mutating func capRate(_ rate: Int64?) {
        guard !job.state.isTerminal else { return refuse("job \(id) is \(job.state.rawValue); only an unfinished job is capped") }
        var next = job
        next.maxRate = rate
        update(next)
    }

    /// Whether `reevaluate` at `now` can change anything: a refresh check that is due, a job that waits or runs.
    /// (A paused job, and a finished one, stay as they are.)
    public func reevaluates(at now: Timestamp) -> Bool {
        reevaluatesFrom.map { $0 <= now } ?? false
    }

    /// From when `reevaluates(at:)` is true, nil for never: at any time for a job that waits or runs, from its
    /// next check for a completed one.
    public var reevaluatesFrom: Timestamp? {
        if job.state == .completed { return job.nextCheck }
        return !job.state.isTerminal && job.state != .paused ? Timestamp(microseconds: .min) : nil
    }

    /// Re-decides the job: a due refresh check is queued; a waiting job is queued or deferred by the gate
    /// (asking the size when the route is metered and it is unknown); a running one whose route no longer
    /// allows it is stopped.
    mutating func reevaluate(_ route: JobRoute) {
        let now = moment.now
        if job.state == .completed, let due = job.download?.nextCheck, due <= now {
            // A new transfer, conditional on the file in place, which stays until it is replaced.
            var next = job
            next.reason = "refresh check due"
            next.bytesMoved = 0
            next.bytesTotal = nil
            next.changeDownload { $0.partial = Validators() }
            if sizeQuestion == .answered { sizeQuestion = .unasked }
            update(next, life: .queued)
        }
        timeEdge = rules.gate.nextTimeEdge(job: job, now: now, zone: rules.zone)
        if !life.holdsSlot {
            decideWaiting(route, now: now)
        } else if !life.stopAsked {
            // A constraint that stops holding pauses the transfer as a metered route does; a deadline that fails the
            // job stops it first, and the job fails once the attempt is over.
            switch decision(route: route, size: job.bytesTotal, sizeChecked: true, now: now) {
            case .wait(let reason), .fail(let reason):
                actions.append(.log("job \(id): stopping, \(reason)", metadata: [:]))
                stop(.deferral(reason))
            case .run, .needSize: break
            }
        }
    }

    private mutating func decideWaiting(_ route: JobRoute, now: Timestamp) {
        guard life == .queued || life == .deferred else { return }
        var next = job
        if let retryAt = job.retryAt, retryAt > now { return update(next, life: .deferred) }
        next.retryAt = nil
        switch decision(route: route, size: job.bytesTotal, sizeChecked: sizeQuestion == .answered || job.bytesTotal != nil, now: now) {
        case .fail(let reason):
            next.reason = reason
            timeEdge = nil
            update(next, life: .failed)
            actions += [.unwatchHost, .log("job \(id): \(reason)", metadata: [:])]
        case .run:
            next.reason = nil
            update(next, life: .queued)
        case .wait(let reason):
            next.reason = reason
            update(next, life: .deferred)
        case .needSize:
            next.reason = route.verdict?.metered == false
                ? "deferred: asking the server for the size, which its constraints weigh"
                : "deferred: the route is metered; asking the server for the size"
            if sizeQuestion == .unasked {
                sizeQuestion = .asking
                actions.append(.probeSize)
            }
            update(next, life: .deferred)
        }
    }

    /// The server's size answer: kept when the job had none; the queue decides again.
    mutating func sizeProbed(_ size: Int64?) {
        sizeQuestion = .answered
        if job.bytesTotal == nil, let size {
            var next = job
            next.bytesTotal = size
            update(next)
        }
        actions.append(.reschedule)
    }
}
