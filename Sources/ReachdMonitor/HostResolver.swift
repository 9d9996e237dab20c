import NIOPosix
import ReachdModel
import ReachdNetlink

/// Runs `SystemResolver` (getaddrinfo) on a small thread pool, so the event loops never block on DNS.
package final class HostResolver: Sendable {
    private let pool: NIOThreadPool

    package init(threads: Int = 2) {
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    package func shutdown() async {
        try? await pool.shutdownGracefully()
    }

    package func resolve(_ name: String) async -> Resolution {
        (try? await pool.runIfActive { SystemResolver.resolve(name) }) ?? .failed("resolver stopped")
    }
}
