import NIOCore
import NIOPosix
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// An upload's request body, pulled by async-http-client as it can send: the text before the file, the
/// file read in 1 MiB pieces on a file thread (never held whole), the text after it. With a multipart
/// `delimiter`, each piece is searched for it as it is read: if the file contains it, the body stops with
/// `BoundaryInFile` before the closing delimiter (the server never gets a complete, wrong body).
struct UploadBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    /// The file contains the multipart boundary: the upload is sent again with another.
    struct BoundaryInFile: Error {}

    let prefix: [UInt8]
    /// Read on its file threads; held until the body is done.
    let file: FileToSend
    let suffix: [UInt8]
    let delimiter: [UInt8]?
    /// Told the file bytes handed over so far.
    let progress: @Sendable (Int64) async -> Void

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
        private var scanner: DelimiterScanner?

        init(body: UploadBody) {
            self.body = body
            scanner = body.delimiter.map(DelimiterScanner.init)
        }

        mutating func next() async throws -> ByteBuffer? {
            if !sentPrefix {
                sentPrefix = true
                if !body.prefix.isEmpty { return ByteBuffer(bytes: body.prefix) }
            }
            if offset < body.size {
                let count = Int(Swift.min(Int64(UploadBody.pieceBytes), body.size - offset))
                let file = body.file, at = offset, scanner = self.scanner
                let (piece, scanned) = try await file.threads.runIfActive { () throws -> (ByteBuffer, DelimiterScanner?) in
                    var buffer = ByteBuffer()
                    try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                        let n = pread(file.raw, raw.baseAddress, count, off_t(at))
                        guard n > 0 else { throw n == 0 ? FileError.fileToUploadGotShorter : FileError("reading the file to upload") }
                        return n
                    }
                    guard var scanner else { return (buffer, nil) }
                    if scanner.feed(buffer.readableBytesView) { throw BoundaryInFile() }
                    return (buffer, scanner)
                }
                self.scanner = scanned
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
