import Logging
import ReachdNetlink
import ServiceLifecycle

/// Keeps the netlink watcher feeding the hub until shutdown.
public struct WatcherService: Service {
    let watcher: NetlinkWatcher

    public init(watcher: NetlinkWatcher) { self.watcher = watcher }

    public func run() async throws {
        try? await gracefulShutdown()
        watcher.stop()
    }
}

/// Serves the Unix socket until shutdown, then removes it.
public struct SocketServerService: Service {
    let server: SocketServer

    public init(server: SocketServer) { self.server = server }

    public func run() async throws {
        try? await gracefulShutdown()
        await server.shutdown()
    }
}
