import AsyncHTTPClient
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// What the fetcher tells the scheduler while it works.
protocol FetchObserver: Sendable {
    /// May a transfer of `total` bytes (nil: unknown) run on the job's current route?
    func allows(jobID: String, total: Int64?) async -> Bool
    /// The response head was accepted: the partial file now holds `offset` bytes of the version `validators`.
    func started(jobID: String, offset: Int64, total: Int64?, validators: Validators) async
    /// `bytes` of the file are on disk.
    func progress(jobID: String, bytes: Int64) async
}

extension Fetcher {
    /// Fetches the rest of `job` into its partial file (which holds `offset` bytes of the version its validators name):
    /// Range/If-Range by `ResumePlan`, the body streamed to the file with backpressure, lengths checked.
    /// `credentials` (from netrc) go into `Authorization`, over https only unless the job allows plain http.
    func fetch(_ job: Job, into file: AttemptPartialFile, offset: Int64, credentials: Credentials?, via lease: ProxyLease,
               pacer: RatePacer?, observer: some FetchObserver) async -> FetchOutcome {
        let partial = job.download?.partial ?? Validators()
        let plan = ResumePlan.request(offset: offset, validators: partial, installed: job.isRefreshing ? job.download?.installed : nil)
        var request = Self.request(job.url)
        for (name, value) in plan.headers { request.headers.add(name: name, value: value) }
        let response: HTTPClientResponse
        switch await send(request, credentials: credentials, allowInsecureAuth: job.allowInsecureAuth, via: lease) {
        case .failure(let error): return error.outcome
        case .success(let answer): response = answer
        }
        let head = ResumePlan.Response(status: Int(response.status.code), headers: response.headers)
        switch ResumePlan.interpret(head, offset: plan.offset, current: partial, total: plan.offset > 0 ? job.bytesTotal : nil,
                                    conditional: plan.isConditional) {
        case .complete:
            return await Self.flushed(file) ?? .complete(total: plan.offset)
        case .notModified:
            return .notModified
        case .restart(let reason):
            logger.notice("job \(job.id): \(reason)")
            return await Self.emptied(file) ?? .restart(reason: reason)
        case .retry(let reason, let retryAfter):
            let seconds = retryAfter.flatMap { RetryPolicy.retryAfterSeconds($0, now: Double(time(nil))) }
            return .retry(reason: reason, retryAfter: seconds)
        case .fail(let reason):
            return .failed(reason: reason)
        case .write(let start, let total, let validators):
            if start != offset || plan.offset != offset {
                // A full body: the server ignored the range or the file changed. Start over, and ask the
                // gate again: a restart is a new transfer of the whole size.
                logger.info("job \(job.id): full body instead of a resume at \(offset)", metadata: ["status": "\(head.status)"])
                guard await observer.allows(jobID: job.id, total: total) else { return .notAllowed(total: total) }
                if let failure = await Self.emptied(file) { return failure }
            } else if plan.offset == 0, !(await observer.allows(jobID: job.id, total: total)) {
                return .notAllowed(total: total)
            }
            await observer.started(jobID: job.id, offset: start, total: total, validators: validators)
            return await download(response.body, into: file, at: start, total: total, jobID: job.id, pacer: pacer, observer: observer)
        }
    }

    /// The body into the partial file from `start`, as the attempt's outcome: complete and flushed when it has
    /// `total` bytes (or ended without one announced).
    private func download(_ body: HTTPClientResponse.Body, into partial: AttemptPartialFile, at start: Int64, total: Int64?,
                          jobID: String, pacer: RatePacer?, observer: some FetchObserver) async -> FetchOutcome {
        let file: PartialFile
        do {
            file = try await partial.created()
        } catch {
            return .failed(reason: "failed: \(error)")
        }
        switch await receive(body, into: file, at: start, limit: total, pacer: pacer,
                             progress: { await observer.progress(jobID: jobID, bytes: $0) }) {
        case .overLimit(let total):
            return .restart(reason: "server sent more than the \(total) bytes it announced")
        case .writeFailed(let error) where error.directoryNotAnswering != nil:
            return .destinationNotAnswering(reason: "\(error)")
        case .writeFailed(let error):
            return .failed(reason: error.isDiskFull ? "failed: disk full: \(error)" : "failed: \(error)")
        case .cancelled:
            // Stopped (a pause, a sleep, a shutdown): what arrived is flushed to disk for the next attempt, whatever comes.
            try? await file.sync()
            return .stopped
        case .broken(let position, let error):
            return .retry(reason: "connection lost after \(position) bytes: \(Self.describe(error))", retryAfter: nil)
        case .ended(let position):
            if let total, position != total {
                return .retry(reason: "connection closed after \(position) of \(total) bytes", retryAfter: nil)
            }
            return await Self.flushed(partial) ?? .complete(total: position)
        }
    }

    /// Flushes the partial file to disk (created if it is missing: it is what goes into place): nil when done, else
    /// the job's outcome.
    private static func flushed(_ partial: AttemptPartialFile) async -> FetchOutcome? {
        do {
            try await partial.created().sync()
            return nil
        } catch {
            return .failed(reason: "failed: \(error)")
        }
    }

    /// Empties the partial file (a missing one is empty): nil when done, else the job's outcome.
    private static func emptied(_ partial: AttemptPartialFile) async -> FetchOutcome? {
        do {
            try await partial.file?.truncate()
            return nil
        } catch {
            return .failed(reason: "failed: \(error)")
        }
    }
}
