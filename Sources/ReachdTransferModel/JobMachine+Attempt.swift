import ReachdModel

/// One transfer attempt: started, progressing, ended with a `FetchOutcome`, then finished (digest, move
/// into place, 304) before its slot is free.
extension JobMachine {
    /// Starts a transfer; not while the last one is still finishing (paused and resumed meanwhile).
    mutating func start() {
        guard attempt == nil else { return }
        var next = job
        next.state = .running
        next.reason = nil
        update(next)
        attempt = Attempt(checkpointBytes: job.bytesReceived, checkpointSeconds: moment.monotonic)
        actions.append(.startAttempt)
    }

    mutating func attemptStarted(offset: Int64, total: Int64?, validators: Validators) {
        var next = job
        next.bytesReceived = offset
        next.bytesTotal = total
        next.validators = validators
        update(next)
    }

    /// Progress: counted, written to the store at checkpoints, told to watchers at most every event interval.
    mutating func progressed(_ bytes: Int64) {
        attempt?.progressed = true
        actions.append(.countTransferred(bytes: bytes - job.bytesReceived, upload: job.kind == .upload))
        let now = moment.monotonic
        let since = (bytes: bytes - (attempt?.checkpointBytes ?? 0), seconds: now - (attempt?.checkpointSeconds ?? 0))
        var next = job
        next.bytesReceived = bytes
        if rules.checkpoint.isDue(bytesSince: since.bytes, secondsSince: since.seconds) {
            attempt?.checkpointBytes = bytes
            attempt?.checkpointSeconds = now
            update(next)
        } else {
            job = next
            if now - (lastEventSeconds ?? 0) >= rules.eventIntervalSeconds { notify(job) }
        }
    }

    /// The attempt's outcome: a stop the scheduler asked for wins over what the transfer reported, unless
    /// the transfer got to its end first.
    mutating func attemptEnded(_ outcome: FetchOutcome, partialSize: Int64) {
        guard attempt != nil else { return }
        let intent = attempt?.intent
        attempt?.intent = nil
        attempt?.refreshing = job.isRefreshing
        if case .cancel = intent {
            if job.kind == .download { actions.append(.removePartial) }
            attempt = nil
            actions += [.attemptOver, .reschedule]
            return
        }
        var next = job
        switch outcome {
        case .uploaded(let status, let body):
            next.responseStatus = status
            next.responseBody = body
            next.bytesReceived = next.bytesTotal ?? next.bytesReceived
            next.state = .completed
            next.reason = nil
            next.attempts = 0
            next.retryAt = nil
            actions.append(.log("upload \(id) completed", metadata: ["status": "\(status)", "bytes": "\(next.bytesReceived)"]))
        case .complete(let total):
            next.bytesReceived = total
            next.bytesTotal = total
            job = next
            attempt?.finishing = next.sha256 == nil ? .move : .digest
            actions.append(next.sha256 == nil ? .moveIntoPlace : .verifyDigest)
            return
        case .notModified:
            attempt?.finishing = .output
            actions += [.removePartial, .measureOutput]
            return
        default:
            if let intent {
                next.bytesReceived = job.kind == .download ? partialSize : 0
                switch intent {
                case .pause: next.state = .paused
                case .deferral(let reason):
                    next.state = .deferred
                    next.reason = reason
                case .cancel: break
                }
            } else if apply(outcome, partialSize: partialSize, to: &next) {
                return concludeAfterRemovingPartial(next)
            }
        }
        conclude(next, notModified: false)
    }

    /// The digest of a complete download: a mismatch discards it, a match moves it into place.
    mutating func digestComputed(_ digest: Result<String, JobFailure>) {
        guard attempt?.finishing == .digest, let expected = job.sha256 else { return }
        var next = job
        switch digest {
        case .success(let actual) where actual == expected:
            attempt?.finishing = .move
            actions.append(.moveIntoPlace)
            return
        case .success(let actual):
            next.state = .failed
            next.reason = "failed: SHA-256 mismatch: expected \(expected), got \(actual); the download was discarded"
            return concludeAfterRemovingPartial(next)
        case .failure(let failure):
            next.state = .failed
            next.reason = "failed: \(failure.description)"
        }
        conclude(next, notModified: false)
    }

    mutating func movedIntoPlace(_ failure: JobFailure?) {
        guard attempt?.finishing == .move else { return }
        var next = job
        if let failure {
            next.state = .failed
            next.reason = "failed: \(failure.description)"
            return concludeAfterRemovingPartial(next)
        } else {
            next.current = next.validators
            markChecked(&next)
            actions.append(.log("job \(id) completed", metadata: ["bytes": "\(next.bytesReceived)", "output": "\(next.output)"]))
        }
        conclude(next, notModified: false)
    }

    /// After a 304: the file in place is current.
    mutating func outputMeasured(_ size: Int64) {
        guard attempt?.finishing == .output else { return }
        var next = job
        next.bytesReceived = size
        next.bytesTotal = size
        next.validators = Validators()
        markChecked(&next)
        actions.append(.log("job \(id): not modified since \(next.current.lastModified ?? next.current.etag ?? "the last check")", metadata: [:]))
        conclude(next, notModified: true)
    }

    /// A failed attempt whose partial file goes first: the attempt keeps its slot until `partialRemoved`.
    private mutating func concludeAfterRemovingPartial(_ ended: Job) {
        attempt?.finishing = .removal(ending: ended)
        actions.append(.removePartial)
    }

    mutating func partialRemoved() {
        guard case .removal(let ended) = attempt?.finishing else { return }
        conclude(ended, notModified: false)
    }

    /// The attempt is over: a failed refresh keeps the file in place and plans the next check; the slot is freed,
    /// the job stored, a finished one's host no longer followed.
    private mutating func conclude(_ ended: Job, notModified: Bool) {
        var next = ended
        let refreshing = attempt?.refreshing ?? false
        if next.state == .failed && next.lastChecked != nil {
            next.reason = "refresh failed (\(next.reason ?? "?")); the file in place is kept"
            markChecked(&next, reason: next.reason)
            actions.append(.countRefresh(.failed))
        } else if refreshing, next.state == .completed {
            actions.append(.countRefresh(notModified ? .notModified : .changed))
        }
        attempt = nil
        actions.append(.attemptOver)
        update(next)
        if isFinished { actions.append(.unwatchHost) }
        actions.append(.reschedule)
    }

    /// The file in place is current as of now: completed, next check planned.
    private func markChecked(_ job: inout Job, reason: String? = nil) {
        let now = moment.now
        job.state = .completed
        job.reason = reason
        job.attempts = 0
        job.retryAt = nil
        job.lastChecked = now
        job.nextCheck = job.refreshSeconds.map { Timestamp(microseconds: now.microseconds + $0 * 1_000_000) }
    }

    /// An attempt that ended without reaching its end and without a stop asked for; true when the job failed
    /// and its partial file is to be removed.
    private mutating func apply(_ outcome: FetchOutcome, partialSize: Int64, to job: inout Job) -> Bool {
        // An upload starts again from its first byte.
        job.bytesReceived = job.kind == .download ? partialSize : 0
        if attempt?.progressed == true { job.attempts = 0 }
        switch outcome {
        case .complete, .notModified, .uploaded, .stopped:
            job.state = .queued
        case .notAllowed(let total):
            job.bytesTotal = total
            sizeChecked = true
            job.state = .deferred
        case .restart(let reason):
            actions += [.countRetry, .log("job \(id): starting over: \(reason)", metadata: [:])]
            job.validators = Validators()
            job.bytesReceived = 0
            job.attempts += 1
            if job.attempts >= rules.retry.maximumAttempts {
                job.state = .failed
                job.reason = "failed after \(job.attempts) attempts: \(reason)"
            } else {
                job.state = .queued
            }
        case .retry(let reason, let retryAfter):
            actions.append(.countRetry)
            job.attempts += 1
            if let delay = rules.retry.delay(afterAttempt: job.attempts, retryAfter: retryAfter, jitter: moment.jitter) {
                job.state = .deferred
                job.retryAt = Timestamp(microseconds: moment.now.microseconds + Int64(delay * 1e6))
                job.reason = "deferred: attempt \(job.attempts) failed (\(reason)); retrying in \(Int(delay.rounded(.up))) s"
                actions.append(.log("job \(id): \(reason); retry in \(delay) s", metadata: [:]))
            } else {
                job.state = .failed
                job.reason = "failed after \(job.attempts) attempts: \(reason)"
            }
        case .failed(let reason):
            job.state = .failed
            job.reason = reason
            return job.kind == .download
        }
        return false
    }
}
