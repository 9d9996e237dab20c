import NIOCore
import ReachdSystem
import Synchronization

extension Sleeper {
    /// Sleeps on a timer of `group`'s event loops, which wake for nothing else: no libdispatch thread starts.
    /// A cancelled task's sleep ends at once, its timer cancelled.
    package static func eventLoops(_ group: any EventLoopGroup) -> Sleeper {
        Sleeper { duration in try await EventLoopSleep.sleep(on: group.any(), for: duration) }
    }
}

/// One sleep on an event loop's timer, cancelled with its task.
private final class EventLoopSleep: Sendable {
    private enum State {
        case waiting
        case armed(Scheduled<Void>)
        case cancelled
    }

    private let state = Mutex(State.waiting)

    static func sleep(on loop: any EventLoop, for duration: Duration) async throws {
        let sleep = EventLoopSleep()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let timer = loop.scheduleTask(in: TimeAmount(duration)) {}
                timer.futureResult.whenComplete { result in
                    switch result {
                    case .success: continuation.resume()
                    case .failure: continuation.resume(throwing: CancellationError())
                    }
                }
                sleep.arm(timer)
            }
        } onCancel: {
            sleep.cancel()
        }
    }

    /// Keeps `timer` for a cancellation to come, or cancels it where one came first.
    private func arm(_ timer: Scheduled<Void>) {
        let cancelled = state.withLock { state in
            guard case .waiting = state else { return true }
            state = .armed(timer)
            return false
        }
        if cancelled { timer.cancel() }
    }

    private func cancel() {
        let timer = state.withLock { state -> Scheduled<Void>? in
            defer { state = .cancelled }
            guard case .armed(let timer) = state else { return nil }
            return timer
        }
        timer?.cancel()
    }
}
