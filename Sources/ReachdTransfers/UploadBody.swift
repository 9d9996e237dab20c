import NIOCore
import NIOPosix
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// An upload's request body, pulled by async-http-client as it can send: the text before the file, the
/// file read in 1 MiB pieces on a file thread (never held whole), the text after it.
struct UploadBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    let prefix: [UInt8]
    /// Read on its file threads; held until the body is done.
    let file: FileToSend
    let suffix: [UInt8]
    /// Told the file bytes handed over so far.
    let progress: @Sendable (Int64) async -> Void
    /// The caps the pieces are handed over under; nil: none.
    var pacer: RatePacer?

    static let pieceBytes = 1 << 20

    /// The file's bytes in the body.
    var size: Int64 { file.size }

    func makeAsyncIterator() -> Iterator { Iterator(body: self) }

    struct Iterator: AsyncIteratorProtocol {
        let body: UploadBody
        private var sentPrefix = false
        private var offset: Int64 = 0
        private var reported: Int64 = 0
        private var sentSuffix = false

        init(body: UploadBody) {
            self.body = body
        }

        mutating func next() async throws -> ByteBuffer? {
            if !sentPrefix {
                sentPrefix = true
                if !body.prefix.isEmpty { return ByteBuffer(bytes: body.prefix) }
            }
            if offset < body.size {
                let count = Int(Swift.min(Int64(body.pacer?.pieceBytes(largest: UploadBody.pieceBytes) ?? UploadBody.pieceBytes), body.size - offset))
                await body.pacer?.take(count)
                await body.pacer?.admit(count)
                let file = body.file, at = offset
                let piece = try await file.threads.run { () throws -> ByteBuffer in
                    var buffer = ByteBuffer()
                    try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                        let n = pread(file.raw, raw.baseAddress, count, off_t(at))
                        guard n > 0 else { throw n == 0 ? FileError.fileToUploadGotShorter : FileError("reading the file to upload") }
                        return n
                    }
                    return buffer
                }
                offset += Int64(piece.readableBytes)
                // Each report is a hop to the scheduler's actor: every 1 MiB, and at the end of the file.
                if offset - reported >= Fetcher.progressBytes || offset == body.size {
                    reported = offset
                    await body.progress(offset)
                }
                return piece
            }
            if !sentSuffix {
                sentSuffix = true
                if !body.suffix.isEmpty { return ByteBuffer(bytes: body.suffix) }
            }
            return nil
        }
    }
}
