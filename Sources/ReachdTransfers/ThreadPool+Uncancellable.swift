import NIOCore
import NIOPosix

extension NIOThreadPool {
    /// Runs `body` on the pool and waits for it even when the calling task is cancelled: a stopped
    /// transfer still writes what it received and removes or measures its files (NIO's async
    /// `runIfActive` would refuse to start work in a cancelled task).
    func runUncancellable<T: Sendable>(_ body: @Sendable @escaping () throws -> T) async throws -> T {
        try await runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.any(), body).get()
    }
}
