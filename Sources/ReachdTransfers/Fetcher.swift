import AsyncHTTPClient
import CReachdFiles
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ReachdTransferModel
import struct Foundation.URL
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

/// One attempt at a job over HTTP with async-http-client: Range/If-Range resume, the body streamed
/// to the partial file with backpressure (one batch written on a file thread while the next arrives),
/// lengths checked. Requests with credentials or a body use a client that follows no redirects (the header must not
/// travel to another server; an upload must not become a GET). Every request has a connection of its own
/// (`Connection: close`): a pooled connection may belong to a route that is gone since (it would hang until the read timeout).
final class Fetcher: Sendable {
    private let client: HTTPClient
    private let clientWithoutRedirects: HTTPClient
    private let fileThreads: NIOThreadPool
    private let logger: Logger
    /// Bytes gathered before a write: small, because what is received but not yet written is fetched
    /// again after a crash.
    static let writeBatchBytes = 256 << 10
    /// The socket's receive buffer: bounds the bytes in flight (also lost by a crash) without limiting
    /// speed on fast links (the kernel would otherwise grow it to several MiB).
    static let receiveBufferBytes = 128 << 10
    /// Write-back is started every this many bytes.
    static let writeBackBytes: Int64 = 16 << 20
    /// Progress goes to the scheduler every this many bytes (and at the end): each report is a hop to its actor,
    /// and watchers see progress at most every 0.25 s anyway.
    static let progressBytes: Int64 = 1 << 20

    /// `caFile`: PEM certificates trusted besides the system's; `readTimeout`: seconds a server may stay silent.
    init(caFile: String?, readTimeout: Double, logger: Logger) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.additionalTrustRoots = [.file(caFile)] }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .follow(max: 5, allowCycles: false),
            timeout: .init(connect: .seconds(10), read: .milliseconds(Int64(readTimeout * 1000))),
            decompression: .disabled
        )
        configuration.httpVersion = .http1Only
        configuration.http1_1ConnectionDebugInitializer = { channel in
            channel.setOption(ChannelOptions.socketOption(.so_rcvbuf), value: SocketOptionValue(Self.receiveBufferBytes)).flatMap {
                // Reads as large as the buffer: fewer, bigger chunks through the body stream.
                channel.setOption(ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(
                    minimum: 4096, initial: 64 << 10, maximum: Self.receiveBufferBytes * 2))
            }
        }
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        configuration.redirectConfiguration = .disallow
        clientWithoutRedirects = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        fileThreads = NIOThreadPool(numberOfThreads: 2)
        fileThreads.start()
        self.logger = logger
    }

    func shutdown() async {
        try? await client.shutdown()
        try? await clientWithoutRedirects.shutdown()
        try? await fileThreads.shutdownGracefully()
    }

    /// The size from a HEAD request, nil when the server does not say (or the request fails). Sent like
    /// every other request, so credentials go only where `send` lets them.
    func size(of url: String, credentials: Credentials?, allowInsecureAuth: Bool) async -> Int64? {
        let request = Self.request(url, method: .HEAD)
        guard case .success(let response) = await send(request, credentials: credentials, allowInsecureAuth: allowInsecureAuth,
                                                       deadline: .now() + .seconds(30)),
              response.status == .ok else { return nil }
        return contentLength(response.headers.first(name: "Content-Length"))
    }

    /// Fetches the rest of `job` into its partial file `fd` (which holds `offset` bytes of `job.validators`' version).
    /// `credentials` (from netrc) go into `Authorization`, over https only unless the job allows plain http.
    func fetch(_ job: Job, fd: Int32, offset: Int64, credentials: Credentials?, observer: some FetchObserver) async -> FetchOutcome {
        let plan = ResumePlan.request(offset: offset, validators: job.validators, installed: job.isRefreshing ? job.current : nil)
        var request = Self.request(job.url)
        for (name, value) in plan.headers { request.headers.add(name: name, value: value) }
        let response: HTTPClientResponse
        switch await send(request, credentials: credentials, allowInsecureAuth: job.allowInsecureAuth) {
        case .failure(let error): return error.outcome
        case .success(let answer): response = answer
        }
        let head = ResumePlan.Response(
            status: Int(response.status.code),
            contentLength: contentLength(response.headers.first(name: "Content-Length")),
            contentRange: response.headers.first(name: "Content-Range"),
            retryAfter: response.headers.first(name: "Retry-After"),
            contentEncoding: response.headers.first(name: "Content-Encoding"),
            validators: Self.validators(response.headers)
        )
        switch ResumePlan.interpret(head, offset: plan.offset, current: job.validators, total: plan.offset > 0 ? job.bytesTotal : nil,
                                    conditional: plan.isConditional) {
        case .complete:
            return await sync(fd) ?? .complete(total: plan.offset)
        case .notModified:
            return .notModified
        case .restart(let reason):
            logger.notice("job \(job.id): \(reason)")
            return await truncate(fd) ?? .restart(reason: reason)
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
                if let failure = await truncate(fd) { return failure }
            } else if plan.offset == 0, !(await observer.allows(jobID: job.id, total: total)) {
                return .notAllowed(total: total)
            }
            await observer.started(jobID: job.id, offset: start, total: total, validators: validators)
            return await receive(response.body, into: fd, at: start, total: total, jobID: job.id, observer: observer)
        }
    }

    /// A response's validators, Last-Modified judged strong or not against its Date.
    static func validators(_ headers: HTTPHeaders) -> Validators {
        Validators(etag: headers.first(name: "ETag"), lastModified: headers.first(name: "Last-Modified"), date: headers.first(name: "Date"))
    }

    /// The header fields every request starts with: who asks, a connection of its own, and the bytes as the
    /// server stores them (no content coding).
    static let commonFields: [(name: String, value: String)] = [
        ("User-Agent", "reachd-transfers/1"), ("Connection", "close"), ("Accept-Encoding", "identity"),
    ]

    /// Every request is made here and sent through `send`, which alone adds credentials: one path for the
    /// rule of where they may go.
    static func request(_ url: String, method: HTTPMethod = .GET) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for field in commonFields { request.headers.add(name: field.name, value: field.value) }
        return request
    }

    /// The fields a request sent through `send` with `credentials` carries besides its own (for the cache's Vary check).
    static func sentFields(credentials: Credentials?) -> [(name: String, value: String)] {
        commonFields + (credentials.map { [("Authorization", $0.authorization)] } ?? [])
    }

    /// Sends `request` (with the credentials, over https or when the job allows plain http); a failure is the job's outcome.
    /// Redirects are followed only without credentials and body (a POST answered 301/302, or any 303, would become a GET).
    private func send(_ request: HTTPClientRequest, credentials: Credentials?, allowInsecureAuth: Bool,
                      deadline: NIODeadline = .distantFuture) async -> Result<HTTPClientResponse, OutcomeError> {
        let sent: HTTPClientRequest
        switch authorized(request, credentials: credentials, allowInsecureAuth: allowInsecureAuth) {
        case .failure(let error): return .failure(error)
        case .success(let withCredentials): sent = withCredentials
        }
        do {
            return .success(try await (credentials == nil && request.body == nil ? client : clientWithoutRedirects).execute(sent, deadline: deadline))
        } catch {
            return .failure(Self.outcome(of: error))
        }
    }

    /// `request` with the credentials' `Authorization`, which goes only over https or where the job allows plain http.
    private func authorized(_ request: HTTPClientRequest, credentials: Credentials?,
                            allowInsecureAuth: Bool) -> Result<HTTPClientRequest, OutcomeError> {
        guard let credentials else { return .success(request) }
        guard request.url.lowercased().hasPrefix("https:") || allowInsecureAuth else {
            return .failure(OutcomeError(.failed(reason: "failed: the netrc has credentials for this server but the URL is plain http; "
                + "use https, or --allow-insecure-auth to send them readable")))
        }
        var request = request
        request.headers.add(name: "Authorization", value: credentials.authorization)
        return .success(request)
    }

    /// A request that failed with `error`, as the job's outcome.
    private static func outcome(of error: any Error) -> OutcomeError {
        switch error {
        case let error as HTTPClientError where error == .redirectLimitReached || error == .redirectCycleDetected:
            return OutcomeError(.failed(reason: "failed: more than 5 redirects, or a redirect loop"))
        case let error as NIOSSLError:
            return OutcomeError(.failed(reason: "failed: TLS: \(error) (a certificate the system does not trust? [downloads] ca_file adds a CA)"))
        case let error as BoringSSLError:
            return OutcomeError(.failed(reason: "failed: TLS: \(error)"))
        case let error as FileError:
            return OutcomeError(.failed(reason: "failed: \(error)"))
        case is UploadBody.BoundaryInFile:
            return OutcomeError(.restart(reason: "the file contains the multipart boundary"))
        default:
            return OutcomeError(Task.isCancelled ? .stopped : .retry(reason: "network error: \(describe(error))", retryAfter: nil))
        }
    }

    /// A failed send, as the job's outcome.
    struct OutcomeError: Error {
        let outcome: FetchOutcome
        init(_ outcome: FetchOutcome) { self.outcome = outcome }
    }

    /// Sends the file `fd` (`size` bytes) of upload `job`: the body for PUT, a `multipart/form-data` part for
    /// POST (with a boundary found in neither the file nor the fields); restarts from byte 0 each attempt. Over
    /// plain http the file goes to the socket with `sendfile` (`SendfileBody`), else it is streamed (`UploadBody`).
    /// Sent by the client that follows no redirects, an upload is redirected only here: by a 307 or 308, at most 5
    /// times, never in a loop, never with credentials.
    func upload(_ job: Job, fd: Int32, size: Int64, credentials: Credentials?, observer: some FetchObserver) async -> FetchOutcome {
        var generator = SystemRandomNumberGenerator()
        let id = job.id
        var url = job.url, visited = [job.url]
        while true {
            var request = Self.request(url, method: job.method == .post ? .POST : .PUT)
            var prefix: [UInt8] = [], suffix: [UInt8] = [], delimiter: [UInt8]?
            if job.method == .post {
                let name = String(job.output[job.output.index(after: job.output.lastIndex(of: "/")!)...])
                var form: MultipartForm
                repeat {
                    form = MultipartForm(boundary: MultipartForm.randomBoundary(using: &generator), fields: job.fields,
                                         fileField: job.fileField ?? "file", fileName: name)
                } while form.fieldsContainDelimiter
                request.headers.add(name: "Content-Type", value: form.mediaType)
                (prefix, suffix, delimiter) = (form.head, form.tail, form.delimiter)
            } else {
                request.headers.add(name: "Content-Type", value: "application/octet-stream")
            }
            let progress: @Sendable (Int64) async -> Void = { sent in await observer.progress(jobID: id, bytes: sent) }
            let result: Result<UploadAnswer, OutcomeError>
            if url.lowercased().hasPrefix("http:") {
                let eventLoop = clientWithoutRedirects.eventLoopGroup.next()
                do {
                    let body = try SendfileBody(prefix: prefix, fd: fd, size: size, suffix: suffix, delimiter: delimiter,
                                                pool: fileThreads, eventLoop: eventLoop)
                    // Progress as the socket takes the file, all of it reported before the outcome.
                    async let reported: Void = { for await sent in body.written { await progress(sent) } }()
                    result = await sendWithoutRedirects(request, body: body, credentials: credentials,
                                                        allowInsecureAuth: job.allowInsecureAuth, eventLoop: eventLoop)
                    await reported
                } catch {
                    result = .failure(Self.outcome(of: error))
                }
            } else {
                let body = UploadBody(prefix: prefix, fd: fd, size: size, suffix: suffix, delimiter: delimiter, pool: fileThreads,
                                      progress: progress)
                request.body = .stream(body, length: .known(Int64(prefix.count) + size + Int64(suffix.count)))
                switch await send(request, credentials: credentials, allowInsecureAuth: job.allowInsecureAuth) {
                case .failure(let error): result = .failure(error)
                case .success(let response): result = await answer(response)
                }
            }
            switch result {
            case .failure(let error):
                if case .restart = error.outcome {
                    logger.info("upload \(id): the file contains the multipart boundary; sending again with another")
                    continue
                }
                return error.outcome
            case .success(let answer):
                guard credentials == nil, let target = Self.redirectTarget(of: answer, from: url) else { return answer.outcome(now: Double(time(nil))) }
                guard visited.count <= 5, !visited.contains(target) else {
                    return Self.outcome(of: HTTPClientError.redirectLimitReached).outcome
                }
                logger.info("upload \(id): server answered \(answer.status); sending again to \(target)")
                visited.append(target)
                url = target
            }
        }
    }

    /// Where a 307 or 308 answer sends an upload (method and body kept, RFC 9110 §15.4.8–9): an http or https URL,
    /// `Location` resolved against `url`. Other 3xx would turn the upload into a GET: they end the job with the status.
    static func redirectTarget(of answer: UploadAnswer, from url: String) -> String? {
        guard answer.status == 307 || answer.status == 308, let location = answer.location,
              let target = URL(string: location, relativeTo: URL(string: url))?.absoluteURL,
              let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return nil }
        return target.absoluteString
    }

    /// Sends `request` with `body` through async-http-client's delegate API (the async one takes no file regions),
    /// by the client that follows no redirects; the start of the answer, or the failure as the job's outcome.
    private func sendWithoutRedirects(_ request: HTTPClientRequest, body: SendfileBody, credentials: Credentials?,
                                      allowInsecureAuth: Bool, eventLoop: any EventLoop) async -> Result<UploadAnswer, OutcomeError> {
        let authorizedRequest: HTTPClientRequest
        switch authorized(request, credentials: credentials, allowInsecureAuth: allowInsecureAuth) {
        case .failure(let error):
            body.requestEnded()
            return .failure(error)
        case .success(let withCredentials): authorizedRequest = withCredentials
        }
        let sent: HTTPClient.Request
        do {
            sent = try HTTPClient.Request(url: authorizedRequest.url, method: authorizedRequest.method,
                                          headers: authorizedRequest.headers, body: body.body)
        } catch {
            body.requestEnded()
            return .failure(Self.outcome(of: error))
        }
        // Made only for a request that is executed: its promise must be fulfilled.
        let delegate = UploadAnswerDelegate(eventLoop: eventLoop) { body.partWritten($0) }
        // On the body's event loop: NIO uses the file's descriptor there, and the body closes it there.
        let task = clientWithoutRedirects.execute(request: sent, delegate: delegate, eventLoop: .delegateAndChannel(on: eventLoop))
        // A file that gets shorter after its last check would have NIO send nothing, again and again, until the
        // read timeout: looked at every second while the request runs.
        let watchdog = eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            if body.fileGotShorter() { task.fail(reason: FileError.fileToUploadGotShorter) }
        }
        task.futureResult.whenComplete { _ in
            watchdog.cancel()
            body.requestEnded()
        }
        do {
            let answer = try await withTaskCancellationHandler {
                try await delegate.answered.futureResult.get()
            } onCancel: {
                task.cancel()
            }
            // The rest of the answer is not waited for (a finished request ignores this).
            task.cancel()
            return .success(answer)
        } catch {
            return .failure(Self.outcome(of: error))
        }
    }

    /// The start of a streamed upload's answer: reading stops after 1 KiB.
    private func answer(_ response: HTTPClientResponse) async -> Result<UploadAnswer, OutcomeError> {
        var answer = UploadAnswer(status: Int(response.status.code), headers: response.headers)
        do {
            for try await chunk in response.body {
                if answer.keep(chunk) { break }
            }
        } catch {
            if Task.isCancelled { return .failure(OutcomeError(.stopped)) }
        }
        return .success(answer)
    }

    /// What a cache fetch got.
    enum CacheFetch: Sendable {
        case notModified(HTTPHeaders)
        case stored(status: Int, headers: HTTPHeaders, size: Int64)
        /// Neither 200 nor 304: the answer's status and headers (its body is not read).
        case answered(status: Int, headers: HTTPHeaders)
        case tooLarge(Int64?)
        /// No usable answer (network, TLS, a body that broke off or was refused).
        case failed(String)
    }

    /// GETs `url` into `fd` for the offline cache: conditional on `cached` validators, giving up on bodies over
    /// `limit` (announced or received), and on a body shorter than its Content-Length.
    func fetchToFile(_ url: String, cached: Validators?, limit: Int64?, fd: Int32, credentials: Credentials?) async -> CacheFetch {
        var request = Self.request(url)
        if let etag = cached?.etag { request.headers.add(name: "If-None-Match", value: etag) }
        else if let date = cached?.lastModified { request.headers.add(name: "If-Modified-Since", value: date) }
        let conditional = cached?.etag != nil || cached?.lastModified != nil
        let response: HTTPClientResponse
        switch await send(request, credentials: credentials, allowInsecureAuth: false) {
        case .failure(let error):
            if case .failed(let reason) = error.outcome { return .failed(reason) }
            if case .retry(let reason, _) = error.outcome { return .failed(reason) }
            return .failed("stopped")
        case .success(let answer): response = answer
        }
        let status = Int(response.status.code)
        if status == 304 {
            guard conditional else { return .failed("the server answered 304 to an unconditional request") }
            return .notModified(response.headers)
        }
        guard status == 200 else { return .answered(status: status, headers: response.headers) }
        if let refusal = ResumePlan.refusal(contentEncoding: response.headers.first(name: "Content-Encoding")) { return .failed(refusal) }
        let length = contentLength(response.headers.first(name: "Content-Length"))
        if let limit, (length ?? Int64.max) > limit { return .tooLarge(length) }
        var writer = BatchWriter(fd: fd, pool: fileThreads, position: 0)
        var batch: [ByteBuffer] = [], batchBytes = 0
        do {
            for try await chunk in response.body {
                batch.append(chunk)
                batchBytes += chunk.readableBytes
                if let limit, writer.queuedEnd + Int64(batchBytes) > limit { return .tooLarge(nil) }
                if batchBytes >= Self.writeBatchBytes {
                    try await writer.submit(batch, bytes: batchBytes)
                    batch.removeAll(keepingCapacity: true)
                    batchBytes = 0
                }
            }
            if batchBytes > 0 { try await writer.submit(batch, bytes: batchBytes) }
            try await writer.finish()
        } catch {
            return .failed("\(error)")
        }
        if let length, writer.written != length { return .failed("connection closed after \(writer.written) of \(length) bytes") }
        return .stored(status: status, headers: response.headers, size: writer.written)
    }

    /// Streams the body to the file; stops (after writing what arrived) when the task is cancelled.
    /// One batch is written on a file thread while the next is received.
    private func receive(_ body: HTTPClientResponse.Body, into fd: Int32, at start: Int64, total: Int64?,
                         jobID: String, observer: some FetchObserver) async -> FetchOutcome {
        var writer = BatchWriter(fd: fd, pool: fileThreads, position: start)
        var batch: [ByteBuffer] = []
        var batchBytes = 0
        var reported = start
        func failure(_ error: any Error) -> FetchOutcome {
            guard let error = error as? FileError else { return .failed(reason: "failed: writing the partial file: \(error)") }
            return .failed(reason: error.isDiskFull ? "failed: disk full: \(error)" : "failed: \(error)")
        }
        var streamError: (any Error)?
        do {
            for try await chunk in body {
                batch.append(chunk)
                batchBytes += chunk.readableBytes
                if let total, writer.queuedEnd + Int64(batchBytes) > total {
                    try? await writer.finish()
                    return .restart(reason: "server sent more than the \(total) bytes it announced")
                }
                if batchBytes >= Self.writeBatchBytes {
                    do {
                        try await writer.submit(batch, bytes: batchBytes)
                    } catch {
                        return failure(error)
                    }
                    batch.removeAll(keepingCapacity: true)
                    batchBytes = 0
                    if writer.written - reported >= Self.progressBytes {
                        reported = writer.written
                        await observer.progress(jobID: jobID, bytes: reported)
                    }
                }
                if Task.isCancelled { break }
            }
        } catch {
            streamError = error
        }
        do {
            if batchBytes > 0 { try await writer.submit(batch, bytes: batchBytes) }
            try await writer.finish()
        } catch {
            return failure(error)
        }
        let position = writer.written
        await observer.progress(jobID: jobID, bytes: position)
        if Task.isCancelled { return .stopped }
        if let streamError {
            return .retry(reason: "connection lost after \(position) bytes: \(Self.describe(streamError))", retryAfter: nil)
        }
        if let total, position != total {
            return .retry(reason: "connection closed after \(position) of \(total) bytes", retryAfter: nil)
        }
        return await sync(fd) ?? .complete(total: position)
    }

    /// Batches on their way to the partial file: at most one write in flight on a file thread, so the
    /// network and the disk work at the same time. Waits even in a cancelled task (nothing received is dropped).
    private struct BatchWriter {
        let fd: Int32
        let pool: NIOThreadPool
        /// Bytes of the file on disk: every write before the one in flight.
        private(set) var written: Int64
        /// Where the next batch goes.
        private(set) var queuedEnd: Int64
        private var writtenBack: Int64
        private var inflight: EventLoopFuture<Void>?

        init(fd: Int32, pool: NIOThreadPool, position: Int64) {
            self.fd = fd
            self.pool = pool
            written = position
            queuedEnd = position
            writtenBack = position
        }

        /// Waits for the write in flight, then starts writing `buffers`.
        mutating func submit(_ buffers: [ByteBuffer], bytes: Int) async throws {
            try await finish()
            let at = queuedEnd, end = at + Int64(bytes), fd = fd
            let writeBack = end - writtenBack >= Fetcher.writeBackBytes ? writtenBack : nil
            if writeBack != nil { writtenBack = end }
            inflight = pool.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.any()) {
                try Fetcher.write(buffers, to: fd, at: at, writeBackFrom: writeBack)
            }
            queuedEnd = end
        }

        /// Waits for the write in flight.
        mutating func finish() async throws {
            guard let pending = inflight else { return }
            inflight = nil
            try await pending.get()
            written = queuedEnd
        }
    }

    /// Writes a batch with one `pwritev`; what a short write leaves is written buffer by buffer.
    fileprivate static func write(_ buffers: [ByteBuffer], to fd: Int32, at offset: Int64, writeBackFrom: Int64?) throws {
        var written = 0
        if buffers.count > 1 {
            var vectors: [iovec] = []
            vectors.reserveCapacity(buffers.count)
            let n = withVectors(buffers[...], &vectors) { pwritev(fd, $0, Int32($0.count), off_t(offset)) }
            if n > 0 {
                written = n
            } else if n < 0 && errno != EINTR {
                throw FileError("writing the partial file")
            }
        }
        var at = offset
        for buffer in buffers {
            let skip = min(written, buffer.readableBytes)
            written -= skip
            try buffer.withUnsafeReadableBytes { bytes in
                var done = skip
                while done < bytes.count {
                    let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(at) + off_t(done))
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw FileError("writing the partial file")
                    }
                    done += n
                }
            }
            at += Int64(buffer.readableBytes)
        }
        if let writeBackFrom { reachd_start_writeback(fd, off_t(writeBackFrom), off_t(at - writeBackFrom)) }
    }

    /// Calls `body` with an iovec for each buffer's readable bytes, valid for the call.
    private static func withVectors<R>(_ buffers: ArraySlice<ByteBuffer>, _ vectors: inout [iovec], _ body: ([iovec]) -> R) -> R {
        guard let first = buffers.first else { return body(vectors) }
        return first.withUnsafeReadableBytes { bytes in
            vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count))
            return withVectors(buffers.dropFirst(), &vectors, body)
        }
    }

    private func sync(_ fd: Int32) async -> FetchOutcome? {
        do {
            try await fileThreads.runUncancellable { guard fsync(fd) == 0 else { throw FileError("flushing the partial file") } }
            return nil
        } catch {
            return .failed(reason: "failed: \(error)")
        }
    }

    private func truncate(_ fd: Int32) async -> FetchOutcome? {
        do {
            try await fileThreads.runUncancellable { guard ftruncate(fd, 0) == 0 else { throw FileError("truncating the partial file") } }
            return nil
        } catch {
            return .failed(reason: "failed: \(error)")
        }
    }

    /// SHA-256 of a file, read on a file thread.
    func sha256(ofFileAt path: String, files: UserFiles) async throws -> String {
        let fd = try await files.run { try files.open(path, O_RDONLY, failure: "cannot read \(path)") }
        defer { close(fd) }
        return try await fileThreads.runUncancellable { try FileDigest.sha256(fd: fd) }
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "\(error)" }
        return String(describing: error)
    }
}
