import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// Errors setting up the daemon's socket file.
package enum SocketFileError: Error, CustomStringConvertible, Sendable {
    /// Another process is accepting connections on the path.
    case inUse(String)
    /// The path is too long for `sockaddr_un`.
    case pathTooLong(String)
    /// Something that is not a socket is in the way.
    case notASocket(String)
    /// A system call failed.
    case system(call: String, path: String, errno: Errno)
    /// systemd passed descriptors reachd cannot serve on.
    case activation(String)

    public var description: String {
        switch self {
        case .inUse(let path): "\(path) is in use by a running daemon"
        case .pathTooLong(let path): "socket path too long (max 107 bytes): \(path)"
        case .notASocket(let path): "cannot listen on \(path): it exists and is not a socket"
        case .system(let call, let path, let errno): "\(call)(\(path)): \(errno)"
        case .activation(let detail): "socket activation: \(detail)"
        }
    }
}

/// Prepares a path for binding: creates the parent directory, removes a stale socket, refuses a live one.
package enum SocketFile {
    package static func prepare(path: String) throws {
        guard path.utf8.count < 108 else { throw SocketFileError.pathTooLong(path) }
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            let directory = String(path[..<slash])
            if mkdir(directory, 0o755) != 0 && errno != EEXIST {
                throw SocketFileError.system(call: "mkdir", path: directory, errno: .current)
            }
        }
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else { throw SocketFileError.notASocket(path) }
        if isAccepting(path) { throw SocketFileError.inUse(path) }
        guard unlink(path) == 0 else { throw SocketFileError.system(call: "unlink", path: path, errno: .current) }
    }

    /// Whether something accepts connections on the socket at `path`.
    private static func isAccepting(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8.prefix(raw.count - 1))
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return rc == 0
    }
}
