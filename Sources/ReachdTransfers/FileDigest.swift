import Crypto
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// Checksums of files on disk (swift-crypto).
enum FileDigest {
    /// Lowercase hex SHA-256 of everything readable from `file`, read in 1 MiB blocks.
    static func sha256(of file: borrowing OwnedDescriptor) throws(FileError) -> String {
        var hasher = SHA256()
        let size = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        var offset: off_t = 0
        while true {
            let n: Int
            do throws(SystemCallError) {
                n = try SystemCall.retrying("pread") { pread(file.raw, buffer.baseAddress, size, offset) }
            } catch {
                throw FileError("reading the download to check its SHA-256", error)
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
