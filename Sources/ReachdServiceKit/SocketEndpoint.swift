import Logging
import NIOCore
import NIOPosix
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// Where a daemon's clients connect: a path the daemon binds (and removes at shutdown), or a socket systemd passed.
public enum SocketEndpoint: Sendable {
    case path(String)
    case activated(fd: Int32)

    /// The socket systemd passed if there is one, else `path`. Without either there is nothing to serve
    /// on: a unit must pass its socket, a user's daemon needs `--socket` or `XDG_RUNTIME_DIR`.
    package static func resolve(path: String?) throws -> SocketEndpoint {
        if let fd = try Systemd.activatedSocket() { return .activated(fd: fd) }
        guard let path else {
            throw SocketFileError.activation("no socket was passed, and no path is known: pass --socket PATH or set XDG_RUNTIME_DIR")
        }
        return .path(path)
    }

    /// Binds `bootstrap` here: a path is prepared (a stale socket replaced, a live one refused) and opened
    /// to every local user; a socket systemd passed is taken as it is.
    package func bind(_ bootstrap: ServerBootstrap, logger: Logger) async throws -> any Channel {
        switch self {
        case .path(let path):
            try SocketFile.prepare(path: path)
            let channel: any Channel
            do {
                channel = try await bootstrap.bind(unixDomainSocketPath: path).get()
            } catch let error as IOError {
                throw SocketFileError.system(call: "bind", path: path, errno: Errno(error.errnoCode))
            }
            chmod(path, 0o666)
            logger.info("listening on \(path)")
            return channel
        case .activated(let fd):
            let channel = try await bootstrap.withBoundSocket(fd).get()
            logger.info("listening on the socket systemd passed (fd \(fd))")
            return channel
        }
    }

    /// After the channel is closed: removes a path's socket file (one systemd passed stays).
    package func removeFile(logger: Logger) {
        guard case .path(let path) = self else { return }
        unlink(path)
        logger.info("socket \(path) closed and removed")
    }
}
