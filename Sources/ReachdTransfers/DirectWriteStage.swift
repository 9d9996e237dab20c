import CReachdFiles
import NIOCore
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// The aligned memory through which a partial file's writes go to the disk directly (`O_DIRECT`), past the page
/// cache: a download of gigabytes then does not copy every byte into the page cache (most of a buffered write's
/// CPU) and does not push other files' pages out of it. A direct write needs its memory, length and file offset
/// aligned to the disk's blocks, so the batches are copied in here and whole blocks go out directly; what fills no
/// whole block (the head up to the first block boundary, the tail in `flush`) is written through the page cache.
/// Where the file system takes no direct writes, every write goes through the page cache. Bytes written through the
/// cache (the head, an earlier attempt's tail) are made durable (`fdatasync`) before a direct write goes past them:
/// else a crash could keep the direct writes' new size over blocks never written, and a resume would build on zeros.
/// One write at a time uses it (on a file thread): `PartialFileWriter` has at most one in flight.
final class DirectWriteStage: @unchecked Sendable {
    /// The alignment of a direct write's memory, length and offset: the largest logical block of common disks.
    static let blockSize = 4096
    /// What it holds at most: a batch (`PartialFileWriter.batchBytes`) and the chunk that completed it fit at once.
    static let capacity = 512 << 10

    private let memory = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: blockSize)
    /// Bytes at the start of `memory` not yet written: the last ones given to it, from `heldAt` (a block boundary).
    private var held = 0
    /// Where the bytes given to it end: on disk after `flush`.
    private var end: Int64 = 0
    private var heldAt: Int64 { end - Int64(held) }
    /// Bytes may have gone through the page cache (this attempt's head, an earlier attempt's) and not be durable yet.
    private var cacheMayHoldBytes = true
    /// False once the file system refused a direct write: from then on every write goes through the page cache.
    private var takesDirectWrites = true

    deinit { memory.deallocate() }

    /// Writes `buffers` at `offset`, the end of what came before: whole blocks directly, a head up to the first
    /// block boundary through the page cache, and holds the rest (less than a block) for the next write or `flush`.
    /// Returns where the bytes on disk end.
    func write(_ buffers: [ByteBuffer], to fd: Int32, at offset: Int64) throws(SystemCallError) -> Int64 {
        guard takesDirectWrites else {
            try PartialFileWriter.writeThroughCache(buffers, to: fd, at: offset)
            end = offset + Int64(buffers.reduce(0) { $0 + $1.readableBytes })
            return end
        }
        end = offset
        for buffer in buffers {
            try buffer.withUnsafeReadableBytes { bytes in
                Result { () throws(SystemCallError) in try self.place(bytes, to: fd) }
            }.get()
        }
        try writeWholeBlocks(to: fd)
        return heldAt
    }

    /// Writes what it holds through the page cache: returns where the bytes on disk end (all that was written).
    func flush(to fd: Int32) throws(SystemCallError) -> Int64 {
        if held > 0 {
            try writeThroughCache(UnsafeRawBufferPointer(start: memory, count: held), to: fd, at: heldAt)
            held = 0
        }
        return end
    }

    /// Copies `bytes` in after what it holds (a head, or everything where direct writes are refused, is written at
    /// once through the page cache), writing the held blocks whenever the memory is full.
    private func place(_ bytes: UnsafeRawBufferPointer, to fd: Int32) throws(SystemCallError) {
        var rest = bytes[...]
        while !rest.isEmpty {
            let misaligned = Int(end % Int64(Self.blockSize))
            if held == 0, misaligned != 0 || !takesDirectWrites {
                let count = takesDirectWrites ? min(rest.count, Self.blockSize - misaligned) : rest.count
                try writeThroughCache(UnsafeRawBufferPointer(rebasing: rest.prefix(count)), to: fd, at: end)
                end += Int64(count)
                rest = rest.dropFirst(count)
                continue
            }
            let count = min(rest.count, Self.capacity - held)
            (memory + held).copyMemory(from: UnsafeRawBufferPointer(rebasing: rest.prefix(count)).baseAddress!, byteCount: count)
            held += count
            end += Int64(count)
            rest = rest.dropFirst(count)
            if held == Self.capacity { try writeWholeBlocks(to: fd) }
        }
    }

    /// Writes the whole blocks it holds directly, and keeps the rest at the start of its memory. Where the file system
    /// refuses (EINVAL), everything it holds is written through the page cache, as every later write will be.
    private func writeWholeBlocks(to fd: Int32) throws(SystemCallError) {
        let whole = held / Self.blockSize * Self.blockSize
        guard whole > 0 else { return }
        var done = 0
        do {
            if cacheMayHoldBytes {
                try SystemCall.retrying("fdatasync") { fdatasync(fd) }
                cacheMayHoldBytes = false
            }
            try SystemCall.retrying("fcntl(O_DIRECT)") { reachd_set_direct(fd, 1) }
            while done < whole {
                done += try Self.wroteSome("pwrite(O_DIRECT)", pwrite(fd, memory + done, whole - done, off_t(heldAt) + off_t(done)))
                // A short direct write leaves an unaligned rest: written through the page cache below.
                if done % Self.blockSize != 0 { break }
            }
        } catch where error.errno.rawValue == EINVAL {
            takesDirectWrites = false
        }
        let through = takesDirectWrites ? whole : held
        if done < through {
            try writeThroughCache(UnsafeRawBufferPointer(start: memory + done, count: through - done), to: fd, at: heldAt + Int64(done))
        }
        held -= through
        if held > 0 { memory.copyMemory(from: memory + through, byteCount: held) }
    }

    /// Writes `bytes` at `offset` through the page cache (O_DIRECT cleared first, if it was set).
    private func writeThroughCache(_ bytes: UnsafeRawBufferPointer, to fd: Int32, at offset: Int64) throws(SystemCallError) {
        try SystemCall.retrying("fcntl(O_DIRECT)") { reachd_set_direct(fd, 0) }
        cacheMayHoldBytes = true
        try Self.writeAll(bytes, to: fd, at: offset)
    }

    /// Writes all of `bytes` at `offset`, in as many `pwrite` calls as it takes.
    static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32, at offset: Int64) throws(SystemCallError) {
        var done = 0
        while done < bytes.count {
            done += try wroteSome("pwrite", pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done)))
        }
    }

    /// `written`, the result of a write of at least one byte, once it is not interrupted; a write that took nothing
    /// (which a file system may answer) is an error (EIO), never a loop without end.
    private static func wroteSome(_ name: @autoclosure () -> String, _ written: @autoclosure () -> Int) throws(SystemCallError) -> Int {
        let count = try SystemCall.retrying(name(), written)
        guard count > 0 else { throw SystemCallError(call: name(), errno: Errno(EIO)) }
        return count
    }
}
