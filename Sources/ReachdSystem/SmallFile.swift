#if canImport(Glibc)
import Glibc
#endif

/// Reads a small file the kernel or a system daemon keeps (sysfs, procfs, networkd's state): the bytes
/// read in 4 KiB chunks until end of file or until at least `limit` bytes are in (a file longer than the
/// limit gives more than `limit` bytes, so a caller can tell it was too long), EINTR retried.
package enum SmallFile {
    /// The file's bytes, or nil when it cannot be opened; `flags` are added to `O_RDONLY | O_CLOEXEC`
    /// (e.g. `O_NOFOLLOW`).
    package static func bytes(at path: String, limit: Int, flags: Int32 = 0) -> [UInt8]? {
        guard let file = try? OwnedDescriptor.open(path, O_RDONLY | flags) else { return nil }
        return bytes(of: file, limit: limit)
    }

    /// The same from a file opened already, read from where its offset is.
    package static func bytes(of file: borrowing OwnedDescriptor, limit: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            guard let n = chunk.withUnsafeMutableBytes({ try? file.read(into: $0) }), n > 0 else { break }
            bytes += chunk[..<n]
        }
        return bytes
    }

    /// The same, as text (invalid UTF-8 repaired).
    package static func text(at path: String, limit: Int) -> String? {
        bytes(at: path, limit: limit).map { String(decoding: $0, as: UTF8.self) }
    }
}
