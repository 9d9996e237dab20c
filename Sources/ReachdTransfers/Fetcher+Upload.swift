import AsyncHTTPClient
import NIOCore
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

extension Fetcher {
    /// Sends `file` (`file.size` bytes) of upload `job`: the body for PUT, a `multipart/form-data` part for
    /// POST (its boundary drawn anew for each attempt); restarts from byte 0 each attempt. Over
    /// plain http the file goes to the socket with `sendfile` (`SendfileBody`), else it is streamed (`UploadBody`).
    /// Sent by the client that follows no redirects, an upload is redirected only as `UploadRedirects` decides.
    func upload(_ job: Job, file: FileToSend, credentials: Credentials?, via lease: ProxyLease, pacer: RatePacer?,
                observer: some FetchObserver) async -> FetchOutcome {
        var generator = SystemRandomNumberGenerator()
        let id = job.id
        let form = job.upload?.form ?? .put
        var redirects = UploadRedirects(from: job.url)
        while true {
            let url = redirects.current
            var request = Self.request(url, method: form.method == .post ? .POST : .PUT)
            var prefix: [UInt8] = [], suffix: [UInt8] = []
            if case .post(let fields, let fileField) = form {
                let name = String(job.file[job.file.index(after: job.file.lastIndex(of: "/")!)...])
                let multipart = MultipartForm(boundary: MultipartForm.randomBoundary(using: &generator), fields: fields,
                                              fileField: fileField, fileName: name)
                request.headers.add(name: "Content-Type", value: multipart.mediaType)
                (prefix, suffix) = (multipart.head, multipart.tail)
            } else {
                request.headers.add(name: "Content-Type", value: "application/octet-stream")
            }
            let progress: @Sendable (Int64) async -> Void = { sent in await observer.progress(jobID: id, bytes: sent) }
            let result: Result<UploadAnswer, OutcomeError>
            if url.lowercased().hasPrefix("http:") {
                let way = way(for: url, under: lease)
                let eventLoop = way.clients.notFollowing.eventLoopGroup.next()
                do {
                    let body = try SendfileBody(prefix: prefix, file: file, suffix: suffix, eventLoop: eventLoop, pacer: pacer)
                    // Progress as the socket takes the file, all of it reported before the outcome.
                    async let reported: Void = { for await sent in body.written { await progress(sent) } }()
                    result = await sendWithoutRedirects(request, body: body, credentials: credentials,
                                                        allowInsecureAuth: job.allowInsecureAuth, way: way, eventLoop: eventLoop)
                    await reported
                } catch {
                    result = .failure(Self.failure(of: error))
                }
            } else {
                let body = UploadBody(prefix: prefix, file: file, suffix: suffix, progress: progress, pacer: pacer)
                request.body = .stream(body, length: .known(Int64(prefix.count) + file.size + Int64(suffix.count)))
                switch await send(request, credentials: credentials, allowInsecureAuth: job.allowInsecureAuth, via: lease) {
                case .failure(let error): result = .failure(error)
                case .success(let response): result = await answer(response)
                }
            }
            switch result {
            case .failure(let error):
                return error.outcome
            case .success(let answer):
                switch redirects.next(after: answer, withCredentials: credentials != nil, now: Double(time(nil))) {
                case .finish(let outcome):
                    return outcome
                case .follow(let target):
                    logger.info("upload \(id): server answered \(answer.status); sending again to \(target)")
                }
            }
        }
    }

    /// Sends `request` with `body` through async-http-client's delegate API (the async one takes no file regions),
    /// by `way`'s client that follows no redirects; the start of the answer, or the failure as the job's outcome.
    private func sendWithoutRedirects(_ request: HTTPClientRequest, body: SendfileBody, credentials: Credentials?,
                                      allowInsecureAuth: Bool, way: Way, eventLoop: any EventLoop) async -> Result<UploadAnswer, OutcomeError> {
        let authorizedRequest: HTTPClientRequest
        switch authorized(request, credentials: credentials, allowInsecureAuth: allowInsecureAuth) {
        case .failure(let error):
            body.requestEnded()
            return .failure(error)
        case .success(let withCredentials): authorizedRequest = Self.prepared(withCredentials, for: way)
        }
        let sent: HTTPClient.Request
        do {
            sent = try HTTPClient.Request(url: authorizedRequest.url, method: authorizedRequest.method,
                                          headers: authorizedRequest.headers, body: body.body)
        } catch {
            body.requestEnded()
            return .failure(Self.failure(of: error, via: way.route))
        }
        // Made only for a request that is executed: its promise must be fulfilled.
        let delegate = UploadAnswerDelegate(eventLoop: eventLoop) { body.partWritten($0) }
        // On the body's event loop: NIO uses the file's descriptor there, and the body closes it there.
        let task = way.clients.notFollowing.execute(request: sent, delegate: delegate, eventLoop: .delegateAndChannel(on: eventLoop))
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
            if way.forwards, let route = way.route, answer.proxyRefusedCredentials {
                return .failure(OutcomeError(TransportFailure.proxyCredentials(proxy: route.name, sent: route.credentials != nil)
                    .outcome(cancelled: false)))
            }
            return .success(answer)
        } catch {
            return .failure(Self.failure(of: error, via: way.route))
        }
    }

    /// The start of a streamed upload's answer: reading stops after 1 KiB.
    private func answer(_ response: HTTPClientResponse) async -> Result<UploadAnswer, OutcomeError> {
        var answer = UploadAnswer(status: Int(response.status.code), headers: response.headers)
        do {
            for try await chunk in response.body {
                if answer.keep(chunk.readableBytesView) { break }
            }
        } catch {
            if Task.isCancelled { return .failure(OutcomeError(.stopped)) }
        }
        return .success(answer)
    }
}
