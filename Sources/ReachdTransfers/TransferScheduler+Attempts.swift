import NIOCore
import ReachdModel
import ReachdTransferModel

/// One transfer attempt: the fetcher runs it, tells its progress, and its outcome goes to the job's machine.
extension TransferScheduler {
    /// The transfer task of a started job.
    func attempt(_ id: String) async {
        guard let job = machines[id]?.job else {
            running[id] = nil
            return
        }
        if job.isUpload { uncounted.started(id, at: 0) }
        let pacer = RatePacer(bytesPerSecond: job.maxRate, metered: verdict(for: job)?.metered ?? false,
                              instance: settings.instanceRate, meteredInstance: settings.meteredRate, longestWait: fetcher.readTimeout / 2)
        pacers[id] = pacer
        let (outcome, partialSize) = job.isUpload ? (await sendUpload(job, pacer: pacer), 0) : await download(job, pacer: pacer)
        pacers[id] = nil
        let moved = job.isUpload ? (machines[id]?.job.bytesMoved ?? 0) : partialSize
        uncounted.ended(id, at: moved, on: verdict(for: job)?.interface)
        await feedAwaiting(.attemptEnded(outcome, partialSize: partialSize), to: id)
    }

    /// A download into the partial file, from what it holds: the outcome, and what the partial file holds after it.
    private func download(_ job: Job, pacer: RatePacer) async -> (FetchOutcome, partialSize: Int64) {
        let partial: AttemptPartialFile
        do {
            partial = try await AttemptPartialFile.open(for: job, files: files)
        } catch {
            return (.failed(reason: "failed: \(error)"), await PartialFile.size(of: job, files: files))
        }
        let (lease, steering) = await yieldingLease(for: job, .receiving(pacer), pacer: pacer)
        let outcome = await fetcher.fetch(job, into: partial, offset: partial.sizeAtStart, credentials: await credentials(for: job),
                                          via: lease, pacer: pacer, observer: self)
        endYielding(job.id, steering, pacer: pacer)
        fetcher.release(lease)
        // A file system that does not answer is not asked the file's size: the next attempt measures it.
        if case .destinationNotAnswering = outcome { return (outcome, machines[job.id]?.job.bytesMoved ?? job.bytesMoved) }
        return (outcome, await partial.size())
    }

    /// An upload: the file opened as its owner, sent whole.
    private func sendUpload(_ job: Job, pacer: RatePacer) async -> FetchOutcome {
        let source: FileToSend
        do {
            source = try await files.openForReading(job.file)
        } catch {
            return .failed(reason: "failed: \(error)")
        }
        feed(.uploadOpened(size: source.size), to: job.id)
        var current = machines[job.id]?.job ?? job
        current.bytesTotal = source.size
        let (lease, steering) = await yieldingLease(for: job, .sending, pacer: pacer)
        defer {
            endYielding(job.id, steering, pacer: pacer)
            fetcher.release(lease)
        }
        return await fetcher.upload(current, file: source, credentials: await credentials(for: job), via: lease, pacer: pacer, observer: self)
    }

    /// The attempt's lease. A background job's has clients of its own, whose connection (to the server or to a proxy)
    /// gives way to other traffic, steered by the task returned until `endYielding`.
    private func yieldingLease(for job: Job, _ side: YieldingConnection.Side, pacer: RatePacer) async -> (ProxyLease, Task<Void, Never>?) {
        guard job.isBackground else { return (await proxyLease(for: job), nil) }
        let connection = YieldingConnection(side, job: job.id, logger: logger)
        let lease = await proxyLease(for: job) { connection.connected($0) }
        yieldingConnections[job.id] = connection
        if !side.isReceiving { pacer.gateSending(by: connection) }
        return (lease, Task { await connection.run() })
    }

    private func endYielding(_ id: String, _ steering: Task<Void, Never>?, pacer: RatePacer) {
        steering?.cancel()
        pacer.gateSending(by: nil)
        yieldingConnections[id] = nil
    }

    /// The job's credentials, read for each request; never stored.
    func credentials(for job: Job) async -> Credentials? {
        await CredentialSource(netrcPath: settings.netrcPath, files: files).credentials(for: job.url)
    }

    /// The proxies the job's requests may go through, held until `fetcher.release`; `watching`: told each connection
    /// the lease's own clients open.
    func proxyLease(for job: Job, watching: (@Sendable (any Channel) -> Void)? = nil) async -> ProxyLease {
        await askDesktop(about: job.id)
        let source = CredentialSource(netrcPath: settings.netrcPath, files: files)
        let proxies = proxies(of: machines[job.id]?.job ?? job)
        var lease = await fetcher.lease(proxies, lendsNetrc: !settings.access.isSystem, watching: watching) {
            await source.credentials(forHost: $0)
        }
        if proxies.asked == nil, proxies.instance == nil, proxies.desktop != nil, let resolver = settings.desktopProxies {
            lease.desktopLookup = { await resolver.lookup($0) }
        }
        return lease
    }

    /// Asks the server for the job's size (HEAD); the answer goes to the job's machine.
    func probeSize(of id: String) {
        guard let job = machines[id]?.job else { return }
        Task {
            let lease = await self.proxyLease(for: job)
            let size = await fetcher.size(of: job.url, credentials: await credentials(for: job), allowInsecureAuth: job.allowInsecureAuth,
                                          via: lease)
            fetcher.release(lease)
            self.feed(.sizeProbed(size), to: id)
        }
    }

    // MARK: FetchObserver

    func allows(jobID: String, total: Int64?) -> Bool {
        guard let machine = machines[jobID]?.machine else { return false }
        return machine.allows(total: total, route: route(of: machine.job), at: .now())
    }

    func started(jobID: String, offset: Int64, total: Int64?, validators: Validators) {
        uncounted.started(jobID, at: offset)
        feed(.attemptStarted(offset: offset, total: total, validators: validators), to: jobID)
        // A within-budget job's size, now known, is promised to it: the jobs started after it are weighed again.
        if total != nil, running.count > 1, machines[jobID]?.job.constraints.network.contains(.withinBudget) == true { reschedule() }
    }

    func progress(jobID: String, bytes: Int64) {
        if let job = machines[jobID]?.job { uncounted.moved(jobID, to: bytes, on: verdict(for: job)?.interface) }
        feed(.progressed(bytes: bytes, yielding: yieldingConnections[jobID]?.isYielding ?? false), to: jobID)
    }
}
