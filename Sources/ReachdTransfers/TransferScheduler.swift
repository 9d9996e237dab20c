import Logging
import ReachdModel
import ReachdProtocol
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// The job queue: admits jobs, gates each by the verdict for its own host, runs up to `concurrency` at once
/// in priority order, stops running ones when their route turns metered, retries with backoff, persists
/// every state change and progress checkpoint, and tells watchers.
actor TransferScheduler: FetchObserver {
    struct Settings: Sendable {
        var concurrency = 2
        var gate = TransferGate()
        var retry = RetryPolicy()
        var checkpoint = ProgressCheckpoint()
        /// Progress events to watchers at most this often per job.
        var eventIntervalSeconds = 0.25
        /// The netrc credentials come from; nil: none.
        var netrcPath: String?
        /// Jobs one user may hold (finished ones included), and the service as a whole.
        var maximumJobsPerUser = 1000
        var maximumJobs = 10000
        /// Finished jobs (completed without refresh, failed, cancelled) are forgotten after this many seconds; 0: kept.
        var keepFinishedSeconds: Int64 = 30 * 86400
    }

    /// Why the scheduler stopped a running transfer; applied when its task ends.
    private enum StopIntent {
        case pause, cancel
        case deferral(String)
    }

    private struct Watcher {
        var owner: Owner
        var job: String?
        var send: @Sendable (Job) -> Void
    }

    private let store: JobStore
    private let files: UserFiles
    private let fetcher: Fetcher
    private let hosts: any HostVerdicts
    private let settings: Settings
    private let metrics: TransferMetrics?
    private let logger: Logger

    private var jobs: [String: Job] = [:]
    private var running: [String: Task<Void, Never>] = [:]
    private var stopIntents: [String: StopIntent] = [:]
    private var probing: Set<String> = []
    private var sizeChecked: Set<String> = []
    private var jobHosts = JobHosts()
    /// Per watched host, the call that started its watch: its unwatch waits for it.
    private var hostWatches: [String: Task<Void, Never>] = [:]
    private var lastCheckpoint: [String: (bytes: Int64, seconds: Double)] = [:]
    private var lastEvent: [String: Double] = [:]
    private var progressedThisAttempt: Set<String> = []
    private var watchers: [Int: Watcher] = [:]
    private var nextWatcher = 0
    private var nextSequence: Int64 = 1
    private var retryTimer: Task<Void, Never>?

    init(store: JobStore, files: UserFiles, fetcher: Fetcher, hosts: any HostVerdicts, settings: Settings, metrics: TransferMetrics? = nil,
         logger: Logger) {
        self.metrics = metrics
        self.store = store
        self.files = files
        self.fetcher = fetcher
        self.hosts = hosts
        self.settings = settings
        self.logger = logger
    }

    // MARK: Start and network

    /// Loads the stored jobs; interrupted ones resume from their partial files.
    func load() async throws {
        let stored = try store.all()
        nextSequence = (stored.map(\.sequence).max() ?? 0) + 1
        for var job in stored {
            if !job.state.isTerminal {
                if job.state == .running { job.state = .queued }
                job.bytesReceived = await files.partialSize(of: job)
                if job.bytesReceived == 0 { job.validators = Validators() }
            }
            jobs[job.id] = job
        }
        logger.info("loaded \(stored.count) jobs, \(jobs.values.filter { !$0.state.isTerminal }.count) unfinished")
        expireFinished()
        for job in jobs.values where !job.state.isTerminal || job.refreshSeconds != nil { watchHost(of: job) }
        reschedule()
    }

    /// Takes the host verdicts of `verdicts`, batch by batch in order, until the stream ends.
    func run(verdicts: AsyncStream<[StampedVerdict]>) async {
        for await batch in verdicts { hostVerdictsChanged(batch) }
    }

    /// New verdicts (events may arrive out of order: the newer sequence wins); only hosts a job needs are kept.
    func hostVerdictsChanged(_ changed: [StampedVerdict]) {
        if jobHosts.record(changed) { reschedule() }
    }

    /// Watches the job's host, once for all the jobs that need it.
    private func watchHost(of job: Job) {
        guard let host = try? TransferURL(job.url).host, jobHosts.add(job: job.id, host: host) else { return }
        hostWatches[host] = Task { self.hostVerdictsChanged(await hosts.watch([host])) }
    }

    /// Ends the watch of the job's host when no other job needs it (after the watch has started).
    private func unwatchHost(of id: String) {
        guard let host = jobHosts.remove(job: id) else { return }
        let watch = hostWatches.removeValue(forKey: host)
        Task { [hosts] in
            await watch?.value
            hosts.unwatch([host])
        }
    }

    // MARK: Client operations

    /// Answers a request of the socket or the bus made by `owner` (all but `watch`, which needs a connection).
    func answer(_ request: TransferRequest, owner: Owner) async throws(ProtocolError) -> TransferReply {
        func job() throws(ProtocolError) -> String {
            guard let id = request.job else { throw ProtocolError(.badRequest, "\(request.op.rawValue) needs \"job\"", id: request.id) }
            return id
        }
        switch request.op {
        case .ping: return .pong(id: request.id)
        case .add:
            guard let spec = request.download else { throw ProtocolError(.badRequest, "add needs a download", id: request.id) }
            return .job(id: request.id, job: try await add(spec, owner: owner))
        case .upload:
            guard let spec = request.upload else { throw ProtocolError(.badRequest, "upload needs a file", id: request.id) }
            return .job(id: request.id, job: try await addUpload(spec, owner: owner))
        case .list: return .jobs(id: request.id, jobs: list(owner: owner))
        case .show: return .job(id: request.id, job: try show(try job(), owner: owner))
        case .pause: return .job(id: request.id, job: try await pause(try job(), owner: owner))
        case .resume: return .job(id: request.id, job: try resume(try job(), owner: owner))
        case .cancel: return .job(id: request.id, job: try await cancel(try job(), owner: owner))
        case .refresh: return .job(id: request.id, job: try refresh(try job(), owner: owner))
        case .remove: return .job(id: request.id, job: try remove(try job(), owner: owner))
        case .clean: return .jobs(id: request.id, jobs: clean(owner: owner))
        case .watch: throw ProtocolError(.badRequest, "watch needs a socket connection", id: request.id)
        case .fetch: throw ProtocolError(.badRequest, "fetch is answered by the cache", id: request.id)
        }
    }

    /// The URL is one we can transfer; returns its host.
    nonisolated static func admit(url: String) throws(ProtocolError) -> String {
        let host: String
        do {
            host = try TransferURL(url).host
        } catch {
            throw ProtocolError(.invalidURL, error.description)
        }
        return host
    }

    /// A file operation's failure as the client sees it: permissions, or a path that cannot be used.
    private static func refusal(_ error: any Error) -> ProtocolError {
        guard let error = error as? FileError else { return ProtocolError(.internalError, "\(error)") }
        // A read-only file system is what the system instance's sandbox shows outside what it was granted.
        let hint = error.errno == EROFS ? " (reachd-transfers writes only where it is granted: see \"The system instance\" in docs/transfers.md)" : ""
        return ProtocolError(error.isPermission ? .permissionDenied : .invalidOutput, "\(error)\(hint)")
    }

    /// A new job's id and its place in the queue.
    private func nextJobIdentity() -> (id: String, sequence: Int64) {
        var generator = SystemRandomNumberGenerator()
        defer { nextSequence += 1 }
        return (Job.newID(using: &generator), nextSequence)
    }

    /// Refuses a new job past the limits: per user (the same uid), and for the whole service.
    private func admitAnother(for owner: Owner) throws(ProtocolError) {
        expireFinished()
        let held = jobs.values.filter { $0.owner.uid == owner.uid }.count
        guard held < settings.maximumJobsPerUser else {
            throw ProtocolError(.limit, "uid \(owner.uid) holds \(held) jobs, the most allowed ([downloads] max_jobs_per_user); "
                + "remove finished ones with reachctl download remove ID or clean")
        }
        guard jobs.count < settings.maximumJobs else {
            throw ProtocolError(.limit, "the service holds \(jobs.count) jobs, the most allowed ([downloads] max_jobs)")
        }
    }

    /// A job that is finished: completed (and not kept fresh), failed or cancelled.
    private static func isFinished(_ job: Job) -> Bool {
        job.state.isTerminal && !(job.state == .completed && job.refreshSeconds != nil)
    }

    /// Forgets finished jobs older than `keepFinishedSeconds` (by their last change).
    private func expireFinished() {
        guard settings.keepFinishedSeconds > 0 else { return }
        let before = Timestamp.now().microseconds - settings.keepFinishedSeconds * 1_000_000
        let expired = jobs.values.filter { Self.isFinished($0) && $0.updated.microseconds < before }.map(\.id)
        guard !expired.isEmpty else { return }
        forget(expired)
        logger.info("forgot \(expired.count) finished jobs older than \(settings.keepFinishedSeconds) s")
    }

    private func forget(_ ids: [String]) {
        do {
            try store.delete(ids)
        } catch {
            logger.error("the job store could not be written: \(error)")
            return
        }
        for id in ids {
            jobs[id] = nil
            unwatchHost(of: id)
            lastCheckpoint[id] = nil
            lastEvent[id] = nil
            sizeChecked.remove(id)
        }
    }

    /// Removes a finished job from the table (its file stays where it is).
    func remove(_ id: String, owner: Owner) throws(ProtocolError) -> Job {
        let job = try show(id, owner: owner)
        guard job.state.isTerminal else {
            throw ProtocolError(.conflict, "job \(id) is \(job.state.rawValue); cancel it first, then remove it")
        }
        forget([id])
        return job
    }

    /// Removes the caller's finished jobs (root: everyone's); returns them.
    func clean(owner: Owner) -> [Job] {
        let finished = jobs.values.filter { owner.mayControl($0) && Self.isFinished($0) }.sorted { $0.sequence < $1.sequence }
        forget(finished.map(\.id))
        return finished
    }

    /// Stores a new job (running `undo` when that fails) and starts following it.
    private func enqueue(_ job: Job, undo: () async -> Void = {}) async throws(ProtocolError) -> Job {
        do {
            try store.save(job)
        } catch {
            await undo()
            throw ProtocolError(.internalError, "the job store could not be written: \(error)")
        }
        jobs[job.id] = job
        logger.info("\(job.kind.rawValue) \(job.id) added", metadata: ["url": "\(job.url)", "file": "\(job.output)", "uid": "\(job.owner.uid)"])
        notify(job)
        watchHost(of: job)
        reschedule()
        return jobs[job.id] ?? job
    }

    func add(_ spec: DownloadSpec, owner: Owner) async throws(ProtocolError) -> Job {
        _ = try Self.admit(url: spec.url)
        try admitAnother(for: owner)
        do {
            try OutputPath.validate(spec.output)
        } catch {
            throw ProtocolError(.invalidOutput, error.description)
        }
        if let clash = jobs.values.first(where: { !$0.state.isTerminal && $0.output == spec.output }) {
            throw ProtocolError(.conflict, "job \(clash.id) is already downloading to \(spec.output)")
        }
        let identity = nextJobIdentity()
        let job = Job(id: identity.id, sequence: identity.sequence, spec: spec, owner: owner, created: .now())
        do {
            try await files.createPartial(for: job)
        } catch {
            throw Self.refusal(error)
        }
        return try await enqueue(job) { await self.files.removePartial(of: job) }
    }

    /// Queues an upload of a file the owner can read.
    func addUpload(_ spec: UploadSpec, owner: Owner) async throws(ProtocolError) -> Job {
        _ = try Self.admit(url: spec.url)
        try admitAnother(for: owner)
        guard spec.file.hasPrefix("/"), !spec.file.hasSuffix("/"), !spec.file.utf8.contains(0) else {
            throw ProtocolError(.invalidOutput, "invalid file \"\(spec.file.prefix(200))\": must be an absolute path to a file")
        }
        let size: Int64
        do {
            size = try await files.readableSize(of: spec.file)
        } catch {
            throw Self.refusal(error)
        }
        let identity = nextJobIdentity()
        var job = Job(id: identity.id, sequence: identity.sequence, upload: spec, owner: owner, created: .now())
        job.bytesTotal = size
        return try await enqueue(job)
    }

    func list(owner: Owner) -> [Job] {
        jobs.values.filter { owner.mayControl($0) }.sorted { $0.sequence < $1.sequence }
    }

    func show(_ id: String, owner: Owner) throws(ProtocolError) -> Job {
        guard let job = jobs[id], owner.mayControl(job) else { throw ProtocolError(.notFound, "no job \(id)") }
        return job
    }

    /// Pauses a job; a running transfer is stopped (what arrived stays in the partial file) before this returns.
    func pause(_ id: String, owner: Owner) async throws(ProtocolError) -> Job {
        var job = try show(id, owner: owner)
        guard !job.state.isTerminal else { throw ProtocolError(.conflict, "job \(id) is \(job.state.rawValue)") }
        job.state = .paused
        job.reason = "paused by its owner; reachctl download resume \(id) continues it"
        update(job)
        if let task = running[id] {
            stopIntents[id] = .pause
            task.cancel()
            await task.value
        }
        return jobs[id] ?? job
    }

    func resume(_ id: String, owner: Owner) throws(ProtocolError) -> Job {
        var job = try show(id, owner: owner)
        switch job.state {
        case .completed, .cancelled: throw ProtocolError(.conflict, "job \(id) is \(job.state.rawValue)")
        case .running, .queued: return job
        case .paused, .deferred, .failed:
            job.state = .queued
            job.reason = nil
            job.attempts = 0
            job.retryAt = nil
            update(job)
            watchHost(of: job)
            reschedule()
            return jobs[id] ?? job
        }
    }

    /// Checks a completed job's file against the server now (a refresh job's next check, or a one-off check).
    func refresh(_ id: String, owner: Owner) throws(ProtocolError) -> Job {
        var job = try show(id, owner: owner)
        guard job.kind == .download else { throw ProtocolError(.conflict, "job \(id) is an upload; only downloads are refreshed") }
        if job.isRefreshing { return job }
        guard job.state == .completed else {
            throw ProtocolError(.conflict, "job \(id) is \(job.state.rawValue); only a completed download can be refreshed")
        }
        job.nextCheck = .now()
        update(job)
        watchHost(of: job)
        reschedule()
        return jobs[id] ?? job
    }

    /// Cancels a job; a running transfer is stopped and the partial file removed before this returns.
    func cancel(_ id: String, owner: Owner) async throws(ProtocolError) -> Job {
        var job = try show(id, owner: owner)
        guard !job.state.isTerminal else { throw ProtocolError(.conflict, "job \(id) is already \(job.state.rawValue)") }
        job.state = .cancelled
        job.reason = "cancelled by its owner"
        update(job)
        unwatchHost(of: id)
        if let task = running[id] {
            stopIntents[id] = .cancel
            task.cancel()
            await task.value
        } else if job.kind == .download {
            await files.removePartial(of: job)
        }
        return jobs[id] ?? job
    }

    /// Registers a watcher of the owner's jobs (or one job); returns its token and the jobs it sees now.
    func addWatcher(owner: Owner, job: String?, send: @escaping @Sendable (Job) -> Void) throws(ProtocolError) -> (Int, [Job]) {
        if let job { _ = try show(job, owner: owner) }
        nextWatcher += 1
        watchers[nextWatcher] = Watcher(owner: owner, job: job, send: send)
        let current = list(owner: owner).filter { job == nil || $0.id == job }
        return (nextWatcher, current)
    }

    func removeWatcher(_ token: Int) { watchers[token] = nil }

    // MARK: Scheduling

    private func decision(for job: Job, size: Int64?, sizeChecked: Bool) -> TransferGate.Decision {
        let host = jobHosts.host(of: job.id) ?? ((try? TransferURL(job.url).host) ?? "?")
        let decision = settings.gate.decide(host: host, verdict: jobHosts.verdict(forHost: host)?.verdict, size: size,
                                            sizeChecked: sizeChecked, allowMetered: job.allowMetered)
        // A refresh check is its own size probe: a 304 costs nothing, a large new body is stopped at its head.
        if case .needSize = decision, job.isRefreshing { return .run }
        return decision
    }

    /// Re-decides every unfinished job: queue or defer waiting ones, stop running ones whose route no
    /// longer allows them, start queued ones in order up to the limit.
    private func reschedule() {
        let now = Timestamp.now()
        for var job in jobs.values where job.state == .completed && (job.nextCheck.map { $0 <= now } ?? false) {
            // A refresh check is due: a new transfer, conditional on the file in place, which stays until it is replaced.
            job.state = .queued
            job.reason = "refresh check due"
            job.bytesReceived = 0
            job.bytesTotal = nil
            job.validators = Validators()
            sizeChecked.remove(job.id)
            update(job)
        }
        for var job in jobs.values where !job.state.isTerminal && job.state != .paused && running[job.id] == nil {
            if let retryAt = job.retryAt, retryAt > now {
                job.state = .deferred
                update(job)
                continue
            }
            job.retryAt = nil
            switch decision(for: job, size: job.bytesTotal, sizeChecked: sizeChecked.contains(job.id) || job.bytesTotal != nil) {
            case .run:
                job.state = .queued
                job.reason = nil
            case .wait(let reason):
                job.state = .deferred
                job.reason = reason
            case .needSize:
                job.state = .deferred
                job.reason = "deferred: the route is metered; asking the server for the size"
                probeSize(of: job)
            }
            update(job)
        }
        for (id, task) in running where stopIntents[id] == nil {
            guard let job = jobs[id] else { continue }
            if case .wait(let reason) = decision(for: job, size: job.bytesTotal, sizeChecked: true) {
                logger.info("job \(id): stopping, \(reason)")
                stopIntents[id] = .deferral(reason)
                task.cancel()
            }
        }
        for id in JobQueue.toStart(jobs.values, running: running.count, limit: settings.concurrency) {
            start(id)
        }
        armRetryTimer()
    }

    private func probeSize(of job: Job) {
        guard !probing.contains(job.id) else { return }
        probing.insert(job.id)
        Task {
            let size = await fetcher.size(of: job.url, credentials: await credentials(for: job), allowInsecureAuth: job.allowInsecureAuth)
            self.sizeProbed(job.id, size: size)
        }
    }

    /// The job's credentials, read for each request; never stored.
    private func credentials(for job: Job) async -> Credentials? {
        await CredentialSource(netrcPath: settings.netrcPath, files: files).credentials(for: job.url)
    }

    private func sizeProbed(_ id: String, size: Int64?) {
        probing.remove(id)
        sizeChecked.insert(id)
        if var job = jobs[id], job.bytesTotal == nil, let size {
            job.bytesTotal = size
            update(job)
        }
        reschedule()
    }

    private func armRetryTimer() {
        retryTimer?.cancel()
        retryTimer = nil
        let waiting = jobs.values.filter { !$0.state.isTerminal && $0.state != .paused }.compactMap(\.retryAt)
            + jobs.values.filter { $0.state == .completed }.compactMap(\.nextCheck)
        guard let next = waiting.min() else { return }
        let delay = max(0, Double(next.microseconds - Timestamp.now().microseconds) / 1e6) + 0.01
        retryTimer = Task {
            try? await Task.sleep(for: .seconds(delay))
            guard !Task.isCancelled else { return }
            self.reschedule()
        }
    }

    private func start(_ id: String) {
        guard var job = jobs[id] else { return }
        job.state = .running
        job.reason = nil
        update(job)
        progressedThisAttempt.remove(id)
        lastCheckpoint[id] = (job.bytesReceived, Self.monotonicSeconds())
        running[id] = Task { await self.attempt(id) }
    }

    private func attempt(_ id: String) async {
        guard let job = jobs[id] else { return }
        if job.kind == .upload { return await sendUpload(job) }
        let fd: Int32
        do {
            fd = try await files.openPartial(for: job)
        } catch {
            return await finish(id, .failed(reason: "failed: \(error)"))
        }
        var info = stat()
        let offset = fstat(fd, &info) == 0 ? Int64(info.st_size) : 0
        let outcome = await fetcher.fetch(job, fd: fd, offset: offset, credentials: await credentials(for: job), observer: self)
        close(fd)
        await finish(id, outcome)
    }

    /// One attempt at an upload: the file opened as its owner, sent whole.
    private func sendUpload(_ job: Job) async {
        let source: (fd: Int32, size: Int64)
        do {
            source = try await files.openForReading(job.output)
        } catch {
            return await finish(job.id, .failed(reason: "failed: \(error)"))
        }
        var current = job
        current.bytesTotal = source.size
        update(current)
        let outcome = await fetcher.upload(current, fd: source.fd, size: source.size, credentials: await credentials(for: job), observer: self)
        close(source.fd)
        await finish(job.id, outcome)
    }

    private func finish(_ id: String, _ outcome: FetchOutcome) async {
        let intent = stopIntents.removeValue(forKey: id)
        guard var job = jobs[id] else { running[id] = nil; return }
        let refreshing = job.isRefreshing
        if case .cancel = intent {
            if job.kind == .download { await files.removePartial(of: job) }
            running[id] = nil
            return reschedule()
        }
        if case .uploaded(let status, let body) = outcome {
            job.responseStatus = status
            job.responseBody = body
            job.bytesReceived = job.bytesTotal ?? job.bytesReceived
            job.state = .completed
            job.reason = nil
            job.attempts = 0
            job.retryAt = nil
            logger.info("upload \(job.id) completed", metadata: ["status": "\(status)", "bytes": "\(job.bytesReceived)"])
        } else if case .complete(let total) = outcome {
            await complete(&job, total: total)
        } else if case .notModified = outcome {
            await files.removePartial(of: job)
            job.bytesReceived = await files.size(of: job.output)
            job.bytesTotal = job.bytesReceived
            job.validators = Validators()
            markChecked(&job)
            logger.info("job \(job.id): not modified since \(job.current.lastModified ?? job.current.etag ?? "the last check")")
        } else if let intent {
            job.bytesReceived = job.kind == .download ? await files.partialSize(of: job) : 0
            switch intent {
            case .pause: job.state = .paused
            case .deferral(let reason):
                job.state = .deferred
                job.reason = reason
            case .cancel: break
            }
        } else {
            await apply(outcome, to: &job)
        }
        if job.state == .failed && job.lastChecked != nil {
            // A failed refresh keeps the file in place and the job: the next check is planned as usual.
            job.reason = "refresh failed (\(job.reason ?? "?")); the file in place is kept"
            markChecked(&job, reason: job.reason)
            metrics?.refreshChecked(.failed)
        } else if refreshing, job.state == .completed {
            if case .notModified = outcome { metrics?.refreshChecked(.notModified) } else { metrics?.refreshChecked(.changed) }
        }
        running[id] = nil
        update(job)
        if job.state.isTerminal && !(job.state == .completed && job.refreshSeconds != nil) { unwatchHost(of: id) }
        reschedule()
    }

    /// The file in place is current as of now: completed, next check planned.
    private func markChecked(_ job: inout Job, reason: String? = nil) {
        let now = Timestamp.now()
        job.state = .completed
        job.reason = reason
        job.attempts = 0
        job.retryAt = nil
        job.lastChecked = now
        job.nextCheck = job.refreshSeconds.map { Timestamp(microseconds: now.microseconds + $0 * 1_000_000) }
    }

    private func complete(_ job: inout Job, total: Int64) async {
        job.bytesReceived = total
        job.bytesTotal = total
        if let expected = job.sha256 {
            do {
                let actual = try await fetcher.sha256(ofFileAt: job.partialPath, files: files)
                guard actual == expected else {
                    job.state = .failed
                    job.reason = "failed: SHA-256 mismatch: expected \(expected), got \(actual); the download was discarded"
                    await files.removePartial(of: job)
                    return
                }
            } catch {
                job.state = .failed
                job.reason = "failed: \(error)"
                return
            }
        }
        do {
            try await files.moveIntoPlace(job)
            job.current = job.validators
            markChecked(&job)
            logger.info("job \(job.id) completed", metadata: ["bytes": "\(total)", "output": "\(job.output)"])
        } catch {
            job.state = .failed
            job.reason = "failed: \(error)"
            await files.removePartial(of: job)
        }
    }

    private func apply(_ outcome: FetchOutcome, to job: inout Job) async {
        // An upload starts again from its first byte.
        job.bytesReceived = job.kind == .download ? await files.partialSize(of: job) : 0
        if progressedThisAttempt.contains(job.id) { job.attempts = 0 }
        switch outcome {
        case .complete, .notModified, .uploaded, .stopped:
            job.state = .queued
        case .notAllowed(let total):
            job.bytesTotal = total
            sizeChecked.insert(job.id)
            job.state = .deferred
        case .restart(let reason):
            metrics?.retried()
            logger.info("job \(job.id): starting over: \(reason)")
            job.validators = Validators()
            job.bytesReceived = 0
            job.attempts += 1
            if job.attempts >= settings.retry.maximumAttempts {
                job.state = .failed
                job.reason = "failed after \(job.attempts) attempts: \(reason)"
            } else {
                job.state = .queued
            }
        case .retry(let reason, let retryAfter):
            metrics?.retried()
            job.attempts += 1
            if let delay = settings.retry.delay(afterAttempt: job.attempts, retryAfter: retryAfter, jitter: Double.random(in: 0...1)) {
                job.state = .deferred
                job.retryAt = Timestamp(microseconds: Timestamp.now().microseconds + Int64(delay * 1e6))
                job.reason = "deferred: attempt \(job.attempts) failed (\(reason)); retrying in \(Int(delay.rounded(.up))) s"
                logger.info("job \(job.id): \(reason); retry in \(delay) s")
            } else {
                job.state = .failed
                job.reason = "failed after \(job.attempts) attempts: \(reason)"
            }
        case .failed(let reason):
            job.state = .failed
            job.reason = reason
            if job.kind == .download { await files.removePartial(of: job) }
        }
    }

    // MARK: FetchObserver

    func allows(jobID: String, total: Int64?) -> Bool {
        guard let job = jobs[jobID], stopIntents[jobID] == nil else { return false }
        if case .run = decision(for: job, size: total, sizeChecked: true) { return true }
        return false
    }

    func started(jobID: String, offset: Int64, total: Int64?, validators: Validators) {
        guard var job = jobs[jobID] else { return }
        job.bytesReceived = offset
        job.bytesTotal = total
        job.validators = validators
        update(job)
    }

    func progress(jobID: String, bytes: Int64) {
        guard var job = jobs[jobID] else { return }
        progressedThisAttempt.insert(jobID)
        metrics?.transferred(bytes - job.bytesReceived, upload: job.kind == .upload, metered: verdict(for: job)?.metered ?? false)
        job.bytesReceived = bytes
        let now = Self.monotonicSeconds()
        let last = lastCheckpoint[jobID] ?? (0, 0)
        if settings.checkpoint.isDue(bytesSince: bytes - last.bytes, secondsSince: now - last.seconds) {
            lastCheckpoint[jobID] = (bytes, now)
            update(job)
        } else {
            jobs[jobID] = job
            if now - (lastEvent[jobID] ?? 0) >= settings.eventIntervalSeconds { notify(job) }
        }
    }

    // MARK: Bookkeeping

    /// Records a changed job: stored, then told to watchers.
    private func update(_ job: Job) {
        guard jobs[job.id] != job else { return }
        var changed = job
        changed.updated = .now()
        let before = jobs[job.id]?.state
        jobs[job.id] = changed
        if before != changed.state { metrics?.jobChanged(changed, verdict: verdict(for: changed)) }
        do {
            try store.save(changed)
        } catch {
            logger.error("job \(job.id): the job store could not be written: \(error)")
        }
        notify(changed)
    }

    /// The verdict for the job's host, as last heard.
    private func verdict(for job: Job) -> Verdict? {
        jobHosts.host(of: job.id).flatMap { jobHosts.verdict(forHost: $0)?.verdict }
    }

    /// How many jobs are in each state (the metrics, at a scrape).
    func stateCounts() -> [JobState: Int] {
        jobs.values.reduce(into: [:]) { $0[$1.state, default: 0] += 1 }
    }

    private func notify(_ job: Job) {
        lastEvent[job.id] = Self.monotonicSeconds()
        for watcher in watchers.values where watcher.owner.mayControl(job) && (watcher.job == nil || watcher.job == job.id) {
            watcher.send(job)
        }
    }

    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Stops every transfer (their partial files stay for the next start).
    func stopAll() async {
        retryTimer?.cancel()
        let tasks = Array(running.values)
        for (id, task) in running {
            stopIntents[id] = .deferral("deferred: reachd-transfers stopped")
            task.cancel()
        }
        for task in tasks { await task.value }
    }
}
