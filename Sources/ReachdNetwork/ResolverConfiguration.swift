import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// What the resolver's configuration (`resolv.conf`) says that a path needs: whether it names a name server.
/// Pure.
enum ResolverConfiguration {
    /// Where the C library reads it.
    static let systemPath = "/etc/resolv.conf"
    /// Bytes read at most: the C library reads three name servers and a few options, so anything real fits.
    static let maximumSize = 64 * 1024

    /// A line whose first word is `nameserver`, followed by an address (comments start with `#` or `;`).
    static func namesNameServer<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        bytes.split(separator: UInt8(ascii: "\n")).contains { line in
            let words = line.split { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") }
            return words.count >= 2 && words[0].elementsEqual("nameserver".utf8)
        }
    }

    /// Whether the file at `path` names a name server (no file: no name server). A FIFO does not block the
    /// read (`O_NONBLOCK`); a file longer than `maximumSize` is judged by its beginning.
    static func namesNameServer(at path: String) -> Bool {
        guard let bytes = SmallFile.bytes(at: path, limit: maximumSize, flags: O_NONBLOCK) else { return false }
        return namesNameServer(bytes.prefix(maximumSize))
    }
}
