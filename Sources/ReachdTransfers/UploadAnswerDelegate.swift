import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import ReachdTransferModel
import Synchronization

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
            state.answer?.keep(buffer.readableBytesView) ?? false
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
