#if canImport(Glibc)
import Glibc
#endif

/// A file descriptor this value owns: closed when the value goes away, once. It cannot be copied, so no second
/// owner can close it early. Sendable: the value moves between threads whole, and its owner alone closes it.
package struct OwnedDescriptor: ~Copyable, Sendable {
    /// The descriptor, for the calls this type does not wrap; valid while the value lives.
    package let raw: Int32

    /// Takes ownership of `raw`, an open descriptor.
    package init(adopting raw: Int32) { self.raw = raw }

    /// Opens `path` with `flags` (`O_CLOEXEC` is added) and `mode` for a file it creates.
    package static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(SystemCallError) -> OwnedDescriptor {
        OwnedDescriptor(adopting: try SystemCall.retrying("open(\(path))") { Glibc.open(path, flags | O_CLOEXEC, mode) })
    }

    /// Reads at most `buffer.count` bytes; 0 at end of file.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> Int {
        try SystemCall.retrying("read") { Glibc.read(raw, buffer.baseAddress, buffer.count) }
    }

    deinit { Glibc.close(raw) }
}
