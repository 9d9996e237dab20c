import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import ReachdProtocol
import ReachdTransferModel
import Synchronization

/// The start of a server's answer to an upload: what decides the job's outcome.
struct UploadAnswer: Sendable {
    var status: Int
    var retryAfter: String?
    var location: String?
    /// The first 1 KiB of the body at most: the rest of an answer (which may never end) is not waited for.
    var snippet: [UInt8]

    static let snippetBytes = 1024
}

extension UploadAnswer {
    /// The answer whose head has `status` and `headers`, before its body.
    init(status: Int, headers: HTTPHeaders) {
        self.init(status: status, retryAfter: headers.first(name: "Retry-After"), location: headers.first(name: "Location"), snippet: [])
    }

    /// Keeps what fits of the next part of the body; true once the snippet is full.
    mutating func keep(_ part: ByteBuffer) -> Bool {
        snippet += part.readableBytesView.prefix(Self.snippetBytes - snippet.count)
        return snippet.count >= Self.snippetBytes
    }

    /// The upload's outcome by this answer (`now`: seconds since 1970, for a Retry-After date). A failure quotes the
    /// start of the body on one line, control characters escaped: a server's text must not drive a terminal.
    func outcome(now: Double) -> FetchOutcome {
        let text = String(decoding: snippet, as: UTF8.self)
        switch status {
        case 200..<300: return .uploaded(status: status, body: text)
        case 408, 425, 429, 500...599:
            return .retry(reason: "server answered \(status)", retryAfter: retryAfter.flatMap { RetryPolicy.retryAfterSeconds($0, now: now) })
        default:
            let quote = String(text.split(whereSeparator: \.isWhitespace).joined(separator: " ").prefix(200)).terminalSafe
            return .failed(reason: "failed: server answered \(status)" + (quote.isEmpty ? "" : ": \(quote)"))
        }
    }
}

/// Collects an `UploadAnswer` for a request sent with async-http-client's delegate API: `answered` is
/// fulfilled as soon as the head and the first 1 KiB of the body (or all of a shorter one) are in, and fails
/// with the request's error otherwise. Tells `partWritten` each part of the request written to the socket.
final class UploadAnswerDelegate: HTTPClientResponseDelegate {
    typealias Response = Void

    let answered: EventLoopPromise<UploadAnswer>
    private let partWritten: @Sendable (IOData) -> Void
    private let state = Mutex<(answer: UploadAnswer?, settled: Bool)>((nil, false))

    init(eventLoop: any EventLoop, partWritten: @escaping @Sendable (IOData) -> Void) {
        answered = eventLoop.makePromise()
        self.partWritten = partWritten
    }

    func didSendRequestPart(task: HTTPClient.Task<Void>, _ part: IOData) {
        partWritten(part)
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        state.withLock { $0.answer = UploadAnswer(status: Int(head.status.code), headers: head.headers) }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let full = state.withLock { state -> Bool in
            state.answer?.keep(buffer) ?? false
        }
        if full { settle(.success(())) }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        settle(.success(()))
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        settle(.failure(error))
    }

    /// Completes `answered` once: with the answer so far, or the error.
    private func settle(_ result: Result<Void, any Error>) {
        let answer = state.withLock { state -> Result<UploadAnswer, any Error>? in
            guard !state.settled else { return nil }
            state.settled = true
            return result.flatMap { state.answer.map { .success($0) } ?? .failure(HTTPClientError.remoteConnectionClosed) }
        }
        if let answer { answered.completeWith(answer) }
    }
}
