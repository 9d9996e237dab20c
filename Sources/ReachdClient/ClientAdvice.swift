import ReachdProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The daemon a client asked, as its error messages name it and the way to start it.
public enum ServingDaemon: Sendable, Hashable {
    /// reachd (`--socket`).
    case reachd
    /// reachd-transfers: the system instance, or the user's own.
    case transfers(system: Bool)

    var name: String {
        switch self {
        case .reachd: "reachd"
        case .transfers(let system): system ? "the system reachd-transfers" : "your reachd-transfers"
        }
    }

    /// How to start it, or how to point at another socket.
    var startAdvice: String {
        switch self {
        case .reachd:
            "start it with \"systemctl start reachd.socket\" (or run reachd yourself), or pass --socket PATH"
        case .transfers(system: true):
            "start it with \"systemctl start reachd-transfers.socket\" (as root), or pass --transfers-socket PATH"
        case .transfers(system: false):
            "start it with \"systemctl --user start reachd-transfers.socket\", or use the system instance with --system"
        }
    }

    /// What to use instead of a socket this user may not connect to.
    var otherSocketAdvice: String {
        switch self {
        case .reachd:
            "use the system socket /run/reachd/reachd.sock or your own (drop --socket and REACHD_SOCKET)"
        case .transfers:
            "use your own instance (without --system and --transfers-socket), or the system instance (--system) "
                + "if you are root or in the group reachd-transfers"
        }
    }
}

extension ClientError {
    /// One line for the user: what went wrong talking to the daemon, and what to do about it.
    public var explained: String {
        let peer = daemon
        return switch failure {
        case .connect(let path, let code) where code == ENOENT:
            "\(peer.name) is not running (no socket at \(path)): \(peer.startAdvice)"
        case .connect(let path, let code) where code == ECONNREFUSED:
            "\(peer.name) is not running (nothing listens at \(path)): \(peer.startAdvice)"
        case .connect(let path, let code) where code == EACCES || code == EPERM:
            "you may not connect to \(path) (\(String(cString: strerror(code)))): it is another user's, or in a directory "
                + "closed to you; \(peer.otherSocketAdvice)"
        case .connect(let path, let code) where code == ENAMETOOLONG:
            "the socket path \(path) is longer than a Unix socket's 107 bytes: pass a shorter one"
        case .connect(let path, let code):
            "cannot connect to \(peer.name) at \(path): \(String(cString: strerror(code)))"
        case .io(let call, let code):
            "talking to \(peer.name): \(call): \(String(cString: strerror(code)))"
        case .closed:
            "\(peer.name) closed the connection (it stopped, or refused this client: its log says why)"
        case .malformedReply(let detail):
            "unexpected reply from \(peer.name) (is the socket really its own, and of the same version as reachctl?): \(detail)"
        case .refused(let error):
            "\(peer.name) refused the request (\(error.code.rawValue)): \(error.message)" + Self.advice(for: error.code, from: peer)
        }
    }

    /// What to do about a refusal, for the codes a first-time user meets whose message cannot say it alone.
    private static func advice(for code: ProtocolError.Code, from peer: ServingDaemon) -> String {
        switch (code, peer) {
        case (.notFound, .transfers(let system)):
            system
                ? "; \"reachctl download list --system\" lists the system instance's jobs (those queued without --system are in the user's own)"
                : "; \"reachctl download list\" lists your own instance's jobs (those queued with --system, or as root, are in the system instance)"
        default: ""
        }
    }
}
