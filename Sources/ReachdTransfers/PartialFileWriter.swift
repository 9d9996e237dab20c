import CReachdFiles
import NIOCore
import NIOPosix
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// Batches on their way to a partial file: at most one write in flight on its file threads, so the network and the
/// disk work at the same time. The writes go past the page cache where the file system allows it
/// (`DirectWriteStage`); write-back is started every `writeBackBytes` (`sync_file_range`), so that the pages written
/// through the cache do not pile up dirty. Waits even in a cancelled task (nothing received is dropped).
struct PartialFileWriter {
    let file: PartialFile
    /// Bytes of the file on disk: every write before the one in flight, but for the last block's bytes that the
    /// stage holds until `finish`.
    private(set) var written: Int64
    /// Where the next batch goes.
    private(set) var queuedEnd: Int64
    private var writtenBack: Int64
    private let stage = DirectWriteStage()
    /// The write in flight: where the bytes on disk end when it is done.
    private var inflight: EventLoopFuture<Int64>?

    /// Bytes gathered before a write: small, because what is received but not yet written is fetched
    /// again after a crash.
    static let batchBytes = 256 << 10
    /// Write-back is started every this many bytes.
    static let writeBackBytes: Int64 = 16 << 20

    init(file: PartialFile, position: Int64) {
        self.file = file
        written = position
        queuedEnd = position
        writtenBack = position
    }

    /// Waits for the write in flight, then starts writing `buffers`.
    mutating func submit(_ buffers: [ByteBuffer], bytes: Int) async throws(FileError) {
        try await settle()
        let at = queuedEnd, end = at + Int64(bytes), stage = stage
        let writeBack = end - writtenBack >= Self.writeBackBytes ? writtenBack : nil
        if writeBack != nil { writtenBack = end }
        inflight = onFileThread { (fd: Int32) throws(FileError) in
            try Self.write(buffers, through: stage, to: fd, at: at, writeBackFrom: writeBack)
        }
        queuedEnd = end
    }

    /// Waits for the write in flight, then writes what the stage holds: every byte submitted is in the file.
    mutating func finish() async throws(FileError) {
        try await settle()
        guard written < queuedEnd else { return }
        let stage = stage
        inflight = onFileThread { (fd: Int32) throws(FileError) in
            do throws(SystemCallError) {
                return try stage.flush(to: fd)
            } catch {
                throw FileError("writing the partial file", error)
            }
        }
        try await settle()
    }

    /// Waits for the write in flight, up to `FileThreads.answerSeconds`: then the file's directory counts as not
    /// answering until the write returns (`UserFiles.writeStuck`), and the attempt ends.
    private mutating func settle() async throws(FileError) {
        guard let pending = inflight else { return }
        inflight = nil
        do {
            written = try await Self.answered(pending, file: file).get()
        } catch let error as FileError {
            throw error
        } catch {
            throw FileError("writing the partial file: \(error)", errno: nil)
        }
    }

    /// `write`'s result, or `FileError.notAnswering` once it has not come for `FileThreads.answerSeconds`.
    private static func answered(_ write: EventLoopFuture<Int64>, file: PartialFile) -> EventLoopFuture<Int64> {
        let loop = write.eventLoop, outcome = loop.makePromise(of: Int64.self), first = FirstCall()
        let directory = file.directory
        let deadline = loop.scheduleTask(in: .milliseconds(Int64(FileThreads.answerSeconds * 1000))) {
            guard first.take() else { return }
            file.files.writeStuck(in: directory)
            write.whenComplete { _ in file.files.answered(in: directory) }
            outcome.fail(FileError.notAnswering(directory))
        }
        write.whenComplete { result in
            guard first.take() else { return }
            deadline.cancel()
            outcome.completeWith(result)
        }
        return outcome.futureResult
    }

    /// `body` with the file's descriptor on its file threads. The closure holds `file`, so its descriptor stays open
    /// until the call is done.
    private func onFileThread(_ body: @escaping @Sendable (Int32) throws(FileError) -> Int64) -> EventLoopFuture<Int64> {
        let file = file
        return file.threads.run(on: MultiThreadedEventLoopGroup.singleton.any()) {
            try file.withOpenDescriptor(body)
        }
    }

    /// Writes a batch through `stage`; with `writeBackFrom`, starts write-back of the file from there to the batch's
    /// end. Returns where the bytes on disk end.
    static func write(_ buffers: [ByteBuffer], through stage: DirectWriteStage, to fd: Int32, at offset: Int64,
                      writeBackFrom: Int64?) throws(FileError) -> Int64 {
        let end: Int64
        do {
            end = try stage.write(buffers, to: fd, at: offset)
        } catch {
            throw FileError("writing the partial file", error)
        }
        if let writeBackFrom, end > writeBackFrom { reachd_start_writeback(fd, off_t(writeBackFrom), off_t(end - writeBackFrom)) }
        return end
    }

    /// Writes a batch through the page cache with one `pwritev`; what a short write leaves is written buffer by
    /// buffer. Each call goes through `SystemCall` (an interrupted one made again).
    static func writeThroughCache(_ buffers: [ByteBuffer], to fd: Int32, at offset: Int64) throws(SystemCallError) {
        var written = 0
        if buffers.count > 1 {
            var vectors: [iovec] = []
            vectors.reserveCapacity(buffers.count)
            written = try withVectors(buffers[...], &vectors) { vectors in
                SystemCall.result("pwritev") { pwritev(fd, vectors, Int32(vectors.count), off_t(offset)) }
            }.get()
        }
        var at = offset
        for buffer in buffers {
            let skip = min(written, buffer.readableBytes)
            written -= skip
            try buffer.withUnsafeReadableBytes { bytes in
                Result { () throws(SystemCallError) in
                    try DirectWriteStage.writeAll(UnsafeRawBufferPointer(rebasing: bytes[skip...]), to: fd, at: at + Int64(skip))
                }
            }.get()
            at += Int64(buffer.readableBytes)
        }
    }

    /// Calls `body` with an iovec for each buffer's readable bytes, valid for the call.
    private static func withVectors<R>(_ buffers: ArraySlice<ByteBuffer>, _ vectors: inout [iovec], _ body: ([iovec]) -> R) -> R {
        guard let first = buffers.first else { return body(vectors) }
        return first.withUnsafeReadableBytes { bytes in
            vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count))
            return withVectors(buffers.dropFirst(), &vectors, body)
        }
    }
}
