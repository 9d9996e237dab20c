import ReachdModel
import ReachdProtocol
import ReachdTransferModel
import ReachdTransferProtocol
#if canImport(Glibc)
import Glibc
#endif

/// What clients ask of the queue: admission, the owner's operations, listing and watching.
extension TransferScheduler {
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
        case .list: return .jobs(id: request.id, jobs: list(owner: owner), notice: tableNotice)
        case .show: return .job(id: request.id, job: try show(try job(), owner: owner))
        case .pause: return .job(id: request.id, job: try await pause(try job(), owner: owner))
        case .resume: return .job(id: request.id, job: try resume(try job(), owner: owner))
        case .cancel: return .job(id: request.id, job: try await cancel(try job(), owner: owner))
        case .refresh: return .job(id: request.id, job: try refresh(try job(), owner: owner))
        case .remove: return .job(id: request.id, job: try remove(try job(), owner: owner))
        case .limit: return .job(id: request.id, job: try limit(try job(), to: request.maxRate, owner: owner))
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

    /// A file operation's failure as the client sees it: permissions (with the way out the instance offers), or a
    /// path that cannot be used.
    private func refusal(_ error: FileError) -> ProtocolError {
        let hint = settings.access.fileRefusalHint(errno: error.errno?.rawValue ?? 0)
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
        let held = machines.values.filter { $0.job.owner.uid == owner.uid }.count
        guard held < settings.maximumJobsPerUser else {
            throw ProtocolError(.limit, "uid \(owner.uid) holds \(held) jobs, the most allowed ([downloads] max_jobs_per_user); "
                + "remove finished ones with reachctl download remove ID or clean")
        }
        guard machines.count < settings.maximumJobs else {
            throw ProtocolError(.limit, "the service holds \(machines.count) jobs, the most allowed ([downloads] max_jobs); "
                + "wait for jobs to finish and clean them (reachctl download clean), or an administrator raises max_jobs")
        }
    }

    /// Forgets finished jobs older than `keepFinishedSeconds` (by their last change).
    func expireFinished() {
        guard settings.keepFinishedSeconds > 0 else { return }
        let before = Timestamp.now().microseconds - settings.keepFinishedSeconds * 1_000_000
        let expired = machines.values.filter { $0.machine.isFinished && $0.job.updated.microseconds < before }.map(\.machine.id)
        guard !expired.isEmpty else { return }
        forget(expired)
        logger.info("forgot \(expired.count) finished jobs older than \(settings.keepFinishedSeconds) s")
    }

    /// Drops jobs from memory and their rows (a row that cannot be deleted now is deleted later): everything kept about a
    /// job lives in its machine and goes with it.
    func forget(_ ids: [String]) {
        deleteRows(ids)
        for id in ids {
            machines[id] = nil
            desktopAnswers[id] = nil
            unwatchHost(of: id)
        }
    }

    /// Feeds an owner's operation to the job's machine; a refusal becomes the client's conflict.
    private func ownerOperation(_ event: JobEvent, on id: String) throws(ProtocolError) -> [JobAction] {
        let actions = deliver(event, to: id)
        if case .refuse(let why) = actions.first { throw ProtocolError(.conflict, why) }
        return actions
    }

    /// Sets the job's own rate cap (nil: none); a running transfer follows it from its next piece.
    func limit(_ id: String, to rate: Int64?, owner: Owner) throws(ProtocolError) -> Job {
        _ = try show(id, owner: owner)
        for action in try ownerOperation(.capRate(rate), on: id) { carryOut(action, for: id) }
        pacers[id]?.change(bytesPerSecond: rate, metered: machines[id].flatMap { verdict(for: $0.job)?.metered } ?? false)
        return try show(id, owner: owner)
    }

    /// Removes a finished job from the table (its file stays where it is).
    func remove(_ id: String, owner: Owner) throws(ProtocolError) -> Job {
        let job = try show(id, owner: owner)
        for action in try ownerOperation(.remove, on: id) { carryOut(action, for: id) }
        return job
    }

    /// Removes the caller's finished jobs (root: everyone's); returns them.
    func clean(owner: Owner) -> [Job] {
        let finished = machines.values.filter { owner.mayControl($0.job) && $0.machine.isFinished }.map(\.job).sorted { $0.sequence < $1.sequence }
        forget(finished.map(\.id))
        return finished
    }

    /// Stores a new job (running `undo` when that fails) and starts following it.
    private func enqueue(_ job: Job, undo: () async -> Void = {}) async throws(ProtocolError) -> Job {
        var job = job
        desktopAnswers[job.id] = await desktopAnswer(for: job)
        job.viaProxy = proxy(for: job)?.description
        do {
            try store.save(job)
        } catch {
            desktopAnswers[job.id] = nil
            await undo()
            logger.error("job \(job.id) refused: the job table cannot be written (\(Self.reason(error)))")
            throw ProtocolError(.internalError, "the job table cannot be written (\(Self.reason(error))): the job is not added")
        }
        machines[job.id] = MachineCell(JobMachine(job, rules: settings.rules))
        logger.info("\(job.kind.name.rawValue) \(job.id) added", metadata: ["url": "\(job.url)", "file": "\(job.file)", "uid": "\(job.owner.uid)"])
        feed(.added, to: job.id)
        reschedule()
        return machines[job.id]?.job ?? job
    }

    func add(_ spec: DownloadSpec, owner: Owner) async throws(ProtocolError) -> Job {
        _ = try Self.admit(url: spec.url)
        try admitAnother(for: owner)
        do {
            try OutputPath.validate(spec.output)
        } catch {
            throw ProtocolError(.invalidOutput, error.description)
        }
        if let clash = machines.values.first(where: { !$0.job.state.isTerminal && $0.job.file == spec.output }) {
            throw ProtocolError(.conflict, "job \(clash.machine.id) is already downloading to \(spec.output)")
        }
        let identity = nextJobIdentity()
        let job = Job(id: identity.id, sequence: identity.sequence, spec: spec, owner: owner, created: .now())
        do {
            try await files.createPartial(for: job)
        } catch {
            throw refusal(error)
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
            throw refusal(error)
        }
        let identity = nextJobIdentity()
        var job = Job(id: identity.id, sequence: identity.sequence, upload: spec, owner: owner, created: .now())
        job.bytesTotal = size
        return try await enqueue(job)
    }

    func list(owner: Owner) -> [Job] {
        machines.values.map(\.job).filter { owner.mayControl($0) }.sorted { $0.sequence < $1.sequence }
    }

    func show(_ id: String, owner: Owner) throws(ProtocolError) -> Job {
        guard let job = machines[id]?.job, owner.mayControl(job) else { throw ProtocolError(.notFound, "no job \(id)") }
        return job
    }

    /// Pauses a job; a running transfer is stopped (what arrived stays in the partial file) before this returns.
    func pause(_ id: String, owner: Owner) async throws(ProtocolError) -> Job {
        let job = try show(id, owner: owner)
        for action in try ownerOperation(.pause, on: id) { carryOut(action, for: id) }
        await running[id]?.value
        return machines[id]?.job ?? job
    }

    func resume(_ id: String, owner: Owner) throws(ProtocolError) -> Job {
        let job = try show(id, owner: owner)
        for action in try ownerOperation(.resume, on: id) { carryOut(action, for: id) }
        return machines[id]?.job ?? job
    }

    /// Checks a completed job's file against the server now (a refresh job's next check, or a one-off check).
    func refresh(_ id: String, owner: Owner) throws(ProtocolError) -> Job {
        let job = try show(id, owner: owner)
        for action in try ownerOperation(.refresh, on: id) { carryOut(action, for: id) }
        return machines[id]?.job ?? job
    }

    /// Cancels a job; a running transfer is stopped and the partial file removed before this returns.
    func cancel(_ id: String, owner: Owner) async throws(ProtocolError) -> Job {
        let job = try show(id, owner: owner)
        let actions = try ownerOperation(.cancel, on: id)
        let task = running[id]
        await carryOutAwaiting(actions, for: id)
        await task?.value
        return machines[id]?.job ?? job
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
}
