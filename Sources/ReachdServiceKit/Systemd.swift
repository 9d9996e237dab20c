import CSystemd
import Logging
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// What systemd hands a service and wants to hear from it: readiness, status lines, watchdog pings
/// (`sd_notify(3)`) and sockets passed by socket activation (`sd_listen_fds(3)`). Outside systemd every
/// call is a no-op.
package enum Systemd {
    /// The listening socket systemd passed (`reachd.socket`), if exactly one Unix stream socket was passed
    /// to this process. The descriptor is taken over (LISTEN_* are unset).
    package static func activatedSocket() throws -> Int32? {
        let count = sd_listen_fds(1)
        guard count > 0 else { return nil }
        let fd = SD_LISTEN_FDS_START
        guard count == 1, sd_is_socket_unix(fd, Int32(SOCK_STREAM.rawValue), 1, nil, 0) > 0 else {
            throw SocketFileError.activation("expected one listening Unix stream socket, got \(count) descriptor(s)")
        }
        return fd
    }

    /// `READY=1` with a status line.
    package static func ready(status: String) {
        notify("READY=1\nSTATUS=\(status)")
    }

    /// A `STATUS=` line, shown by `systemctl status`.
    package static func status(_ text: String) {
        notify("STATUS=\(text)")
    }

    package static func stopping() {
        notify("STOPPING=1")
    }

    /// When the unit has `WatchdogSec=`, pings the watchdog from `loop` at half the interval, so a stuck
    /// event loop gets the daemon restarted. Without a watchdog nothing is scheduled.
    package static func startWatchdog(on loop: any EventLoop, logger: Logger) -> RepeatedTask? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        let interval = TimeAmount.microseconds(Int64(usec / 2))
        logger.info("systemd watchdog every \(usec / 2_000) ms")
        return loop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in notify("WATCHDOG=1") }
    }

    private static func notify(_ state: String) {
        _ = sd_notify(0, state)
    }
}
