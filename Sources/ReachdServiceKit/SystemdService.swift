import Logging
import NIOPosix
import ServiceLifecycle

/// What systemd hears from a daemon's service group: `READY=1` when the group runs (every strict start-up step
/// has succeeded, so the daemon serves), watchdog pings while it runs, `STOPPING=1` at graceful shutdown. Added
/// last, it is the first part to hear of the shutdown. Once ready, start-up is over: the code pages it faulted in
/// are unmapped (`ReadOnlyPages`).
package struct SystemdService: Service {
    private let logger: Logger
    private let status: @Sendable () -> String

    /// `status`: the status line sent with `READY=1`.
    package init(logger: Logger, status: @escaping @Sendable () -> String) {
        self.logger = logger
        self.status = status
    }

    package func run() async {
        Systemd.ready(status: status())
        ReadOnlyPages.release()
        let watchdog = Systemd.startWatchdog(on: MultiThreadedEventLoopGroup.singleton.next(), logger: logger)
        try? await gracefulShutdown()
        Systemd.stopping()
        watchdog?.cancel()
    }
}
