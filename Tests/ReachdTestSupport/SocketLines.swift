#if canImport(Glibc)
import Glibc
#endif

/// What a test's client reads from a stream socket.
package enum SocketLines {
    /// The lines (without their newlines) read from `socket` until `count` came, or 30 s passed, or it closed.
    package static func read(_ count: Int, from socket: Int32) -> [[UInt8]] {
        bytes(count, from: socket).split(separator: 10).map(Array.init)
    }

    /// `kept` (bytes read before) and what is read from `socket` after it, until they hold `count` lines, or 30 s
    /// passed, or it closed.
    package static func bytes(_ count: Int, from socket: Int32, after kept: [UInt8] = []) -> [UInt8] {
        var received = kept
        var lines = kept.filter { $0 == 10 }.count
        var chunk = [UInt8](repeating: 0, count: 65536)
        while lines < count {
            var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 30_000) > 0 else { break }
            let n = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            received += chunk.prefix(n)
            lines += chunk.prefix(n).filter { $0 == 10 }.count
        }
        return received
    }
}
