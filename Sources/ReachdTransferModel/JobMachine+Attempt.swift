import ReachdModel

/// One transfer attempt: started, progressing, ended with a `FetchOutcome`, then finished (digest, move
/// into place, 304) before its slot is free.
extension JobMachine {
    /// Starts a transfer; not while the last one is still finishing (paused and resumed meanwhile).
    mutating func start() {
        guard !life.holdsSlot else { return }
        var next = job
        next.reason = nil
        next.pace = nil
        update(next, life: .transferring(Transfer(checkpointBytes: job.bytesMoved, checkpointSeconds: moment.monotonic)))
        actions.append(.startAttempt)
    }

    mutating func attemptStarted(offset: Int64, total: Int64?, validators: Validators) {
        var next = job
        next.bytesMoved = offset
        next.bytesTotal = total
        next.changeDownload { $0.partial = validators }
        update(next)
    }

    /// Progress: counted, written to the store at checkpoints, told to watchers at most every event interval.
    mutating func progressed(_ bytes: Int64, yielding: Bool = false) {
        var transfer = life.transfer
        transfer?.progressed = true
        actions.append(.countTransferred(bytes: bytes - job.bytesMoved, upload: job.isUpload))
        let now = moment.monotonic
        let since = (bytes: bytes - (transfer?.checkpointBytes ?? 0), seconds: now - (transfer?.checkpointSeconds ?? 0))
        var next = job
        next.bytesMoved = bytes
        // The rate since the last progress, kept over at least a quarter of a second.
        if let from = transfer?.rateBytes, let seconds = transfer?.rateSeconds, now - seconds >= 0.25, bytes > from {
            next.pace = JobPace(bytesPerSecond: Int64(Double(bytes - from) / (now - seconds)), yielding: yielding)
            transfer?.rateBytes = bytes
            transfer?.rateSeconds = now
        } else if transfer != nil, transfer?.rateBytes == nil {
            transfer?.rateBytes = bytes
            transfer?.rateSeconds = now
        }
        if rules.checkpoint.isDue(bytesSince: since.bytes, secondsSince: since.seconds) {
            transfer?.checkpointBytes = bytes
            transfer?.checkpointSeconds = now
            if let transfer { life = .transferring(transfer) }
            update(next)
        } else {
            if let transfer { life = .transferring(transfer) }
            job = next
            if now - (lastEventSeconds ?? 0) >= rules.eventIntervalSeconds { notify(job) }
        }
    }

    /// The transfer's outcome: a stop the scheduler asked for wins over what the transfer reported, unless
    /// the transfer got to its end first. A transfer's end outside a transfer (or while it finishes) is ignored.
    mutating func attemptEnded(_ outcome: FetchOutcome, partialSize: Int64) {
        guard let transfer = life.transfer else { return }
        let refreshing = job.isRefreshing
        var next = job
        switch (outcome, transfer.stop) {
        case (_, .cancel?):
            if !job.isUpload { actions.append(.removePartial) }
            life = .cancelled
            actions += [.attemptOver, .reschedule]
        case (.uploaded(let status, let body), _):
            next.changeUpload { $0.answer = Job.Upload.Answer(status: status, body: body) }
            next.bytesMoved = next.bytesTotal ?? next.bytesMoved
            next.reason = nil
            next.attempts = 0
            next.retryAt = nil
            actions.append(.log("upload \(id) completed", metadata: ["status": "\(status)", "bytes": "\(next.bytesMoved)"]))
            conclude(next, as: .completed, refreshing: refreshing, notModified: false)
        case (.complete(let total), _):
            next.bytesMoved = total
            next.bytesTotal = total
            job = next
            life = .finishing(Finish(step: next.download?.sha256 == nil ? .move : .digest, refreshing: refreshing, word: transfer.stop?.word))
            actions.append(next.download?.sha256 == nil ? .moveIntoPlace : .verifyDigest)
        case (.notModified, _):
            life = .finishing(Finish(step: .output, refreshing: refreshing, word: transfer.stop?.word))
            actions += [.removePartial, .measureOutput]
        case (_, .pause?), (_, .pauseThenResume?):
            next.bytesMoved = !job.isUpload ? partialSize : 0
            conclude(next, as: .paused, refreshing: refreshing, notModified: false)
        case (_, .deferral(let reason)?):
            next.bytesMoved = !job.isUpload ? partialSize : 0
            next.reason = reason
            conclude(next, as: .deferred, refreshing: refreshing, notModified: false)
        case (_, nil):
            let (end, removesPartial) = apply(outcome, partialSize: partialSize, progressed: transfer.progressed, to: &next)
            if removesPartial {
                removePartialFirst(Finish(step: .removal(failed: next), refreshing: refreshing, word: nil))
            } else {
                conclude(next, as: end, refreshing: refreshing, notModified: false)
            }
        }
    }

    /// The digest of a complete download: a mismatch discards it, a match moves it into place.
    mutating func digestComputed(_ digest: Result<String, JobFailure>) {
        guard case .finishing(var finish) = life, finish.step == .digest, let expected = job.download?.sha256 else { return }
        var next = job
        switch digest {
        case .success(let actual) where actual == expected:
            finish.step = .move
            life = .finishing(finish)
            actions.append(.moveIntoPlace)
        case .success(let actual):
            next.reason = "failed: SHA-256 mismatch: expected \(expected), got \(actual); the download was discarded"
            finish.step = .removal(failed: next)
            removePartialFirst(finish)
        case .failure(let failure):
            next.reason = "failed: \(failure.description)"
            conclude(next, as: .failed, refreshing: finish.refreshing, notModified: false)
        }
    }

    mutating func movedIntoPlace(_ failure: JobFailure?) {
        guard case .finishing(var finish) = life, finish.step == .move else { return }
        var next = job
        if let failure {
            next.reason = "failed: \(failure.description)"
            finish.step = .removal(failed: next)
            return removePartialFirst(finish)
        }
        next.changeDownload { $0.installed = $0.partial }
        markChecked(&next)
        actions.append(.log("job \(id) completed", metadata: ["bytes": "\(next.bytesMoved)", "output": "\(next.file)"]))
        conclude(next, as: .completed, refreshing: finish.refreshing, notModified: false)
    }

    /// After a 304: the file in place is current.
    mutating func outputMeasured(_ size: Int64) {
        guard case .finishing(let finish) = life, finish.step == .output else { return }
        var next = job
        next.bytesMoved = size
        next.bytesTotal = size
        next.changeDownload { $0.partial = Validators() }
        markChecked(&next)
        let installed = next.download?.installed
        actions.append(.log("job \(id): not modified since \(installed?.lastModified ?? installed?.etag ?? "the last check")", metadata: [:]))
        conclude(next, as: .completed, refreshing: finish.refreshing, notModified: true)
    }

    /// A failed attempt whose partial file goes first (`finish` is its removal): the attempt keeps its slot until
    /// `partialRemoved`.
    private mutating func removePartialFirst(_ finish: Finish) {
        life = .finishing(finish)
        actions.append(.removePartial)
    }

    mutating func partialRemoved() {
        guard case .finishing(let finish) = life, case .removal(let failed) = finish.step else { return }
        conclude(failed, as: .failed, refreshing: finish.refreshing, notModified: false)
    }

    /// The attempt is over, the job `ended` in `end` (queued, deferred, paused, completed or failed): a failed
    /// refresh keeps the file in place and plans the next check; the slot is freed, the job stored, a finished
    /// one's host no longer followed.
    private mutating func conclude(_ ended: Job, as end: Life, refreshing: Bool, notModified: Bool) {
        var next = ended
        var end = end
        if end == .failed && next.download?.lastChecked != nil {
            next.reason = "refresh failed (\(next.reason ?? "?")); the file in place is kept"
            markChecked(&next, reason: next.reason)
            end = .completed
            actions.append(.countRefresh(.failed))
        } else if refreshing, end == .completed {
            actions.append(.countRefresh(notModified ? .notModified : .changed))
        }
        actions.append(.attemptOver)
        update(next, life: end)
        if isFinished { actions.append(.unwatchHost) }
        actions.append(.reschedule)
    }

    /// The file in place is current as of now: next check planned (the job ends completed).
    private func markChecked(_ job: inout Job, reason: String? = nil) {
        let now = moment.now
        job.reason = reason
        job.attempts = 0
        job.retryAt = nil
        job.changeDownload { download in
            download.lastChecked = now
            download.nextCheck = download.refreshSeconds.map { Timestamp(microseconds: now.microseconds + $0 * 1_000_000) }
        }
    }

    /// A transfer that ended without reaching its end and without a stop asked for: the life it ends in, and
    /// whether its partial file is to be removed first (a failed download).
    private mutating func apply(_ outcome: FetchOutcome, partialSize: Int64, progressed: Bool, to job: inout Job) -> (Life, removesPartial: Bool) {
        // An upload starts again from its first byte.
        job.bytesMoved = !job.isUpload ? partialSize : 0
        if progressed { job.attempts = 0 }
        switch outcome {
        case .complete, .notModified, .uploaded, .stopped:
            return (.queued, false)
        case .notAllowed(let total):
            job.bytesTotal = total
            sizeQuestion = .answered
            return (.deferred, false)
        case .restart(let reason):
            actions += [.countRetry, .log("job \(id): starting over: \(reason)", metadata: [:])]
            job.changeDownload { $0.partial = Validators() }
            job.bytesMoved = 0
            job.attempts += 1
            guard job.attempts >= rules.retry.maximumAttempts else { return (.queued, false) }
            job.reason = "failed after \(job.attempts) attempts: \(reason)"
            return (.failed, false)
        case .retry(let reason, let retryAfter):
            actions.append(.countRetry)
            job.attempts += 1
            guard let delay = rules.retry.delay(afterAttempt: job.attempts, retryAfter: retryAfter, jitter: moment.jitter) else {
                job.reason = "failed after \(job.attempts) attempts: \(reason)"
                return (.failed, false)
            }
            job.retryAt = Timestamp(microseconds: moment.now.microseconds + Int64(delay * 1e6))
            job.reason = "deferred: attempt \(job.attempts) failed (\(reason)); retrying in \(Int(delay.rounded(.up))) s"
            actions.append(.log("job \(id): \(reason); retry in \(delay) s", metadata: [:]))
            return (.deferred, false)
        case .failed(let reason):
            job.reason = reason
            return (.failed, !job.isUpload)
        case .destinationNotAnswering(let reason):
            job.reason = "waiting: \(reason)"
            actions.append(.log("job \(id): \(reason)", metadata: [:]))
            return (.deferred, false)
        }
    }
}
