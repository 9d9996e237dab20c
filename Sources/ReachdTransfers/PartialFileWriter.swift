import CReachdFiles
import NIOCore
import NIOPosix
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// Batches on their way to a partial file: at most one write in flight on a file thread, so the network and the
/// disk work at the same time. Write-back is started every `writeBackBytes` (`sync_file_range`), so that dirty
/// pages do not pile up. Waits even in a cancelled task (nothing received is dropped).
struct PartialFileWriter {
    let fd: Int32
    let pool: NIOThreadPool
    /// Bytes of the file on disk: every write before the one in flight.
    private(set) var written: Int64
    /// Where the next batch goes.
    private(set) var queuedEnd: Int64
    private var writtenBack: Int64
    private var inflight: EventLoopFuture<Void>?

    /// Bytes gathered before a write: small, because what is received but not yet written is fetched
    /// again after a crash.
    static let batchBytes = 256 << 10
    /// Write-back is started every this many bytes.
    static let writeBackBytes: Int64 = 16 << 20

    init(fd: Int32, pool: NIOThreadPool, position: Int64) {
        self.fd = fd
        self.pool = pool
        written = position
        queuedEnd = position
        writtenBack = position
    }

    /// Waits for the write in flight, then starts writing `buffers`.
    mutating func submit(_ buffers: [ByteBuffer], bytes: Int) async throws {
        try await finish()
        let at = queuedEnd, end = at + Int64(bytes), fd = fd
        let writeBack = end - writtenBack >= Self.writeBackBytes ? writtenBack : nil
        if writeBack != nil { writtenBack = end }
        inflight = pool.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.any()) {
            try Self.write(buffers, to: fd, at: at, writeBackFrom: writeBack)
        }
        queuedEnd = end
    }

    /// Waits for the write in flight.
    mutating func finish() async throws {
        guard let pending = inflight else { return }
        inflight = nil
        try await pending.get()
        written = queuedEnd
    }

    /// Writes a batch with one `pwritev`; what a short write leaves is written buffer by buffer. With
    /// `writeBackFrom`, starts write-back of the file from there to the batch's end.
    static func write(_ buffers: [ByteBuffer], to fd: Int32, at offset: Int64, writeBackFrom: Int64?) throws {
        var written = 0
        if buffers.count > 1 {
            var vectors: [iovec] = []
            vectors.reserveCapacity(buffers.count)
            let n = withVectors(buffers[...], &vectors) { pwritev(fd, $0, Int32($0.count), off_t(offset)) }
            if n > 0 {
                written = n
            } else if n < 0 && errno != EINTR {
                throw FileError("writing the partial file")
            }
        }
        var at = offset
        for buffer in buffers {
            let skip = min(written, buffer.readableBytes)
            written -= skip
            try buffer.withUnsafeReadableBytes { bytes in
                var done = skip
                while done < bytes.count {
                    let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(at) + off_t(done))
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw FileError("writing the partial file")
                    }
                    done += n
                }
            }
            at += Int64(buffer.readableBytes)
        }
        if let writeBackFrom { reachd_start_writeback(fd, off_t(writeBackFrom), off_t(at - writeBackFrom)) }
    }

    /// Calls `body` with an iovec for each buffer's readable bytes, valid for the call.
    private static func withVectors<R>(_ buffers: ArraySlice<ByteBuffer>, _ vectors: inout [iovec], _ body: ([iovec]) -> R) -> R {
        guard let first = buffers.first else { return body(vectors) }
        return first.withUnsafeReadableBytes { bytes in
            vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count))
            return withVectors(buffers.dropFirst(), &vectors, body)
        }
    }

    /// Flushes the partial file `fd` to disk on a file thread; nil when done, else the job's outcome.
    static func sync(_ fd: Int32, on pool: NIOThreadPool) async -> FetchOutcome? {
        do {
            try await pool.runUncancellable { guard fsync(fd) == 0 else { throw FileError("flushing the partial file") } }
            return nil
        } catch {
            return .failed(reason: "failed: \(error)")
        }
    }

    /// Empties the partial file `fd` on a file thread; nil when done, else the job's outcome.
    static func truncate(_ fd: Int32, on pool: NIOThreadPool) async -> FetchOutcome? {
        do {
            try await pool.runUncancellable { guard ftruncate(fd, 0) == 0 else { throw FileError("truncating the partial file") } }
            return nil
        } catch {
            return .failed(reason: "failed: \(error)")
        }
    }
}
