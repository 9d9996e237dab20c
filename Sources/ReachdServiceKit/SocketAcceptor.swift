import CReachdFiles
import Logging
import ReachdSystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Accepts a Unix socket's connections on a thread of its own (`PollThread`), so that the daemon knows each
/// connection's descriptor from the moment it exists: NIO's accepting channels name none. `handOff` gets each
/// accepted descriptor (close-on-exec, non-blocking) and owns it (SwiftNIO's `withConnectedSocket` takes it on).
/// Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM), accepting pauses for a second, as `AcceptPause`
/// makes NIO's listening channels do, rather than spinning on the waiting connection.
package final class SocketAcceptor: @unchecked Sendable {
    /// Connections accepted in one wake-up before the thread polls again.
    static let acceptedAtOnce = 64
    /// How long accepting rests after it failed for want of descriptors or memory.
    static let pauseMilliseconds: Int64 = 1000

    private let listener: Int32
    private let endpoint: SocketEndpoint
    private let thread: PollThread
    private let logger: Logger
    private let handOff: @Sendable (Int32) -> Void
    /// On the thread only: accepting rests until then (CLOCK_MONOTONIC, ms).
    private var pausedUntil: Int64 = 0
    private let stopped = Atomic<Bool>(false)

    /// Opens `endpoint` for listening (a path is prepared as `SocketEndpoint.bind` prepares it and opened to every
    /// local user; a socket systemd passed is taken as it is) and starts accepting.
    package init(endpoint: SocketEndpoint, backlog: Int32, logger: Logger, handOff: @escaping @Sendable (Int32) -> Void) throws {
        self.endpoint = endpoint
        self.logger = logger
        self.handOff = handOff
        listener = try Self.listen(on: endpoint, backlog: backlog)
        do {
            thread = try PollThread()
        } catch {
            close(listener)
            throw error
        }
        switch endpoint {
        case .path(let path): logger.info("listening on \(path)")
        case .activated(let fd): logger.info("listening on the socket systemd passed (fd \(fd))")
        }
        try thread.start(descriptors: { [unowned self] in waitFor() }, ready: { [unowned self] outcome in
            switch outcome {
            case .ready: acceptWaiting()
            case .failed(let code): logger.critical("cannot accept connections any more: poll failed (\(Errno(code)))")
            }
        })
    }

    deinit { stop() }

    /// Stops accepting and closes the listening socket; removes a path's socket file. `handOff` is not called
    /// after this returns. Stopping twice is harmless.
    package func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        thread.stop()
        close(listener)
        endpoint.removeFile(logger: logger)
    }

    private func waitFor() -> (fds: [pollfd], timeout: Int32) {
        let left = pausedUntil - Self.nowMilliseconds()
        if left > 0 { return ([], Int32(left)) }
        return ([pollfd(fd: listener, events: Int16(POLLIN), revents: 0)], -1)
    }

    private func acceptWaiting() {
        guard pausedUntil <= Self.nowMilliseconds() else { return }
        for _ in 0..<Self.acceptedAtOnce {
            do {
                handOff(try SystemCall.retrying("accept4") { reachd_accept(listener) })
            } catch {
                switch error.errno {
                case Errno(ECONNABORTED), Errno(EPROTO): continue
                case .wouldBlock: return
                default:
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM, and whatever else a ready socket answers: rest instead of spinning.
                    pausedUntil = Self.nowMilliseconds() + Self.pauseMilliseconds
                    logger.warning("cannot accept connections (\(error.errno)): paused for 1 s")
                    return
                }
            }
        }
    }

    private static func nowMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// The listening descriptor: a new socket bound to a path, or systemd's (made non-blocking).
    private static func listen(on endpoint: SocketEndpoint, backlog: Int32) throws -> Int32 {
        switch endpoint {
        case .activated(let fd):
            let flags = fcntl(fd, F_GETFL)
            guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
                throw SocketFileError.activation("the socket systemd passed (fd \(fd)) cannot be used: \(String(cString: strerror(errno)))")
            }
            return fd
        case .path(let path):
            try SocketFile.prepare(path: path)
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { throw SocketFileError.system(call: "socket", path: path, errno: .current) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8.prefix($0.count - 1)) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard bound == 0, Glibc.listen(fd, backlog) == 0 else {
                let failure = SocketFileError.system(call: bound == 0 ? "listen" : "bind", path: path, errno: .current)
                close(fd)
                throw failure
            }
            chmod(path, 0o666)
            return fd
        }
    }
}
