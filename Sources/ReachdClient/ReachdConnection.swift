import ReachdModel
import ReachdProtocol
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// Why talking to a daemon failed, and which daemon (given when the connection was made), so that the message
/// names it: `description` in short, `explained` with what to do about it.
public struct ClientError: Error, CustomStringConvertible, Hashable, Sendable {
    /// What went wrong.
    public enum Failure: Hashable, Sendable {
        /// No daemon listens at the path (or it cannot be reached).
        case connect(path: String, errno: Int32)
        /// A read or write failed.
        case io(call: String, errno: Int32)
        /// The daemon closed the connection.
        case closed
        /// The daemon sent something this client does not understand.
        case malformedReply(String)
        /// The daemon refused the request.
        case refused(ProtocolError)
    }

    public let failure: Failure
    /// The daemon the connection talks to.
    public let daemon: ServingDaemon

    public init(_ failure: Failure, talkingTo daemon: ServingDaemon) {
        self.failure = failure
        self.daemon = daemon
    }

    public var description: String {
        let name = daemon.name
        return switch failure {
        case .connect(let path, let code):
            "cannot connect to \(name) at \(path): \(String(cString: strerror(code)))" + (code == ENOENT || code == ECONNREFUSED ? " (is \(name) running?)" : "")
        case .io(let call, let code): "\(call): \(String(cString: strerror(code)))"
        case .closed: "\(name) closed the connection"
        case .malformedReply(let detail): "unexpected reply from \(name): \(detail)"
        case .refused(let error): "\(name) refused the request (\(error.code.rawValue)): \(error.message)"
        }
    }
}

/// A blocking connection to reachd's Unix socket: send requests, read reply lines with a timeout.
public final class ReachdConnection {
    /// The daemon at the other end, as errors name it.
    public let daemon: ServingDaemon
    private let fd: Int32
    private var framer: LineFramer
    /// Lines read and not yet returned: `lines[linesReturned...]` (a batch of a thousand events is not
    /// shifted down once per line).
    private var lines: [[UInt8]] = []
    private var linesReturned = 0
    /// Event lines read while waiting for a reply, delivered before anything else.
    private var heldEvents: [[UInt8]] = []

    /// The longest reply line taken (4 MiB): the largest answer reachd sends, a `subscribe` or `status` of
    /// `Request.maximumHosts` hosts, fits; a longer line is malformed.
    public static let maximumReplyLineLength = 1 << 22

    /// Connects to the socket at `path`, where `daemon` listens.
    public init(path: String, daemon: ServingDaemon = .reachd) throws(ClientError) {
        self.daemon = daemon
        framer = LineFramer(maximumLineLength: Self.maximumReplyLineLength)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ClientError(.io(call: "socket", errno: errno), talkingTo: daemon) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw ClientError(.connect(path: path, errno: ENAMETOOLONG), talkingTo: daemon)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: path.utf8) }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else {
            let code = errno
            close(fd)
            throw ClientError(.connect(path: path, errno: code), talkingTo: daemon)
        }
        self.fd = fd
    }

    deinit { close(fd) }

    /// The descriptor, for callers that multiplex many connections.
    public var fileDescriptor: Int32 { fd }

    /// Sends one request.
    public func send(_ request: Request) throws(ClientError) {
        try send(raw: request.encodedLine())
    }

    /// Sends bytes as they are (tests use this for malformed input). When the daemon has already closed the
    /// connection, nothing is sent and the next read gives its last words (a refusal) or `.closed`.
    public func send(raw bytes: [UInt8]) throws(ClientError) {
        do throws(SystemCallError) {
            try SystemCall.sendAll(bytes, on: fd)
        } catch {
            // The daemon closed first (a refused connection): what it said before closing is read next.
            if error.errno == Errno(EPIPE) || error.errno == Errno(ECONNRESET) { return }
            throw failure(.io(call: error.call, errno: error.errno.rawValue))
        }
    }

    /// The next reply; nil when `timeout` (seconds) passes first. Waits forever when `timeout` is nil.
    public func nextReply(timeout: Double? = nil) throws(ClientError) -> Reply? {
        guard let line = try nextLine(timeout: timeout) else { return nil }
        do {
            return try Reply.decode(line: line)
        } catch {
            throw failure(.malformedReply(String(decoding: line.prefix(200), as: UTF8.self)))
        }
    }

    /// The next raw line; nil on timeout.
    public func nextLine(timeout: Double? = nil) throws(ClientError) -> [UInt8]? {
        if !heldEvents.isEmpty { return heldEvents.removeFirst() }
        let deadline = timeout.map { MonotonicClock.seconds() + $0 }
        while linesReturned == lines.count {
            lines.removeAll(keepingCapacity: true)
            linesReturned = 0
            if let deadline, deadline - MonotonicClock.seconds() <= 0 { return nil }
            // -1 without a deadline, else the milliseconds left (worked out again after an interrupted poll).
            func wait() -> Int32 {
                guard let deadline else { return -1 }
                return Int32(max(0, min((deadline - MonotonicClock.seconds()) * 1000, Double(Int32.max))).rounded(.up))
            }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready: Int32
            do throws(SystemCallError) {
                ready = try SystemCall.retrying("poll") { poll(&entry, 1, wait()) }
            } catch {
                throw failure(.io(call: error.call, errno: error.errno.rawValue))
            }
            if ready == 0 { continue }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n: Int
            do throws(SystemCallError) {
                n = try buffer.withUnsafeMutableBytes { space in SystemCall.result("recv") { recv(fd, space.baseAddress, space.count, 0) } }.get()
            } catch where error.errno == .wouldBlock {
                continue
            } catch {
                throw failure(.io(call: error.call, errno: error.errno.rawValue))
            }
            if n == 0 { throw failure(.closed) }
            for frame in framer.append(buffer.prefix(n)) {
                switch frame {
                case .line(let line): lines.append(line)
                case .oversized: throw failure(.malformedReply("a reply line over \(framer.maximumLineLength >> 20) MiB"))
                }
            }
        }
        linesReturned += 1
        return lines[linesReturned - 1]
    }

    /// Sends `request` (`status` or `subscribe`) and returns the verdicts of its reply, one per target.
    /// Events that arrive first (from an earlier `subscribe`) are kept for `nextReply`.
    public func verdicts(for request: Request, timeout: Double? = nil) throws(ClientError) -> [StampedVerdict] {
        try send(request)
        while true {
            guard let line = try nextLine(timeout: timeout) else { throw failure(.io(call: "read", errno: ETIMEDOUT)) }
            let reply: Reply
            do {
                reply = try Reply.decode(line: line)
            } catch {
                throw failure(.malformedReply(String(decoding: line.prefix(200), as: UTF8.self)))
            }
            switch reply {
            case .event: heldEvents.append(line)
            case .status(_, let verdict): return [verdict]
            case .subscribed(_, let verdicts): return verdicts
            case .error(let error): throw failure(.refused(error))
            case .pong: throw failure(.malformedReply("pong to \(request.op.rawValue)"))
            }
        }
    }

    /// Sends `request` and returns the verdict of its (first) target.
    public func verdict(for request: Request, timeout: Double? = nil) throws(ClientError) -> StampedVerdict {
        guard let first = try verdicts(for: request, timeout: timeout).first else { throw failure(.malformedReply("a reply without a verdict")) }
        return first
    }

    /// `failure`, as an error that names this connection's daemon.
    public func failure(_ failure: ClientError.Failure) -> ClientError {
        ClientError(failure, talkingTo: daemon)
    }
}
