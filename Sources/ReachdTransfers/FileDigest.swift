import Crypto
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// Checksums of files on disk (swift-crypto).
enum FileDigest {
    /// Lowercase hex SHA-256 of everything readable from `fd`, read in 1 MiB blocks.
    static func sha256(fd: Int32) throws -> String {
        var hasher = SHA256()
        let size = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        var offset: off_t = 0
        while true {
            guard let n = try? SystemCall.retrying("pread", { pread(fd, buffer.baseAddress, size, offset) }) else {
                throw FileError("reading the download to check its SHA-256")
            }
            if n == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            offset += off_t(n)
        }
        return hasher.finalize().map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
