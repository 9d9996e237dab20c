import CReachdFiles
import Foundation
import NIOCore
import ReachdModel
@testable import ReachdTransfers
import ReachdTransferModel
import XCTest

/// A partial file's writes past the page cache (`DirectWriteStage`): every byte lands where it belongs whatever the
/// batches' sizes and the start's alignment, and a download leaves next to nothing of itself in the page cache.
final class DirectWriteTests: XCTestCase {
    private var directory = ""
    private var files: UserFiles!

    override func setUpWithError() throws {
        // Under /var/tmp, on disk: /tmp may be a tmpfs, whose pages are its files.
        directory = "/var/tmp/direct-write-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        files = UserFiles(guarded: [])
    }

    override func tearDown() async throws {
        files.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func openedPartial() async throws -> (Job, PartialFile) {
        let job = Job(id: "0123456789abcdef", sequence: 1, spec: DownloadSpec(url: "http://a.test/f", output: directory + "/out.bin"),
                      owner: Owner(uid: 0, gid: 0), created: Timestamp(microseconds: 0))
        return (job, try await PartialFile.open(for: job, files: files))
    }

    /// Bytes that differ from one position to the next, so that a piece written in the wrong place shows.
    private func pattern(_ count: Int, from start: Int) -> [UInt8] {
        (start..<(start + count)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
    }

    /// Writes `batches` (each cut into pieces of at most `piece` bytes, as a body's chunks come) from `start`, then
    /// finishes.
    private func write(_ batches: [Int], to file: PartialFile, from start: Int, piece: Int = 65_536) async throws -> PartialFileWriter {
        var writer = PartialFileWriter(file: file, position: Int64(start))
        var position = start
        for size in batches {
            let bytes = pattern(size, from: position)
            let pieces = stride(from: 0, to: size, by: piece).map { ByteBuffer(bytes: bytes[$0..<min($0 + piece, size)]) }
            try await writer.submit(pieces, bytes: size)
            position += size
        }
        try await writer.finish()
        return writer
    }

    func testBatchesOfAnySizeFromAnUnalignedStartLandWhereTheyBelong() async throws {
        let (job, file) = try await openedPartial()
        // A first attempt ends off a block boundary; the resume starts there.
        let first = try await write([1000], to: file, from: 0)
        XCTAssertEqual(first.written, 1000)
        // Past the stage's memory at once, a whole block, a single byte, a head that ends inside its first block.
        let batches = [5000, DirectWriteStage.capacity + 12_345, 4096, 1, 70_000, 3]
        let second = try await write(batches, to: file, from: 1000)
        // A piece larger than the stage's memory, and a resume off a block boundary again.
        let third = try await write([DirectWriteStage.capacity * 2 + 7], to: file, from: Int(second.written), piece: .max)
        let total = Int(second.written) + DirectWriteStage.capacity * 2 + 7
        XCTAssertEqual(second.written, Int64(1000 + batches.reduce(0, +)))
        XCTAssertEqual(third.written, Int64(total))
        let contents = try XCTUnwrap(FileManager.default.contents(atPath: job.partialPath))
        XCTAssertEqual(contents.count, total)
        XCTAssertTrue(Array(contents) == pattern(total, from: 0), "the file differs from what was written")
    }

    func testADownloadLeavesAtMostItsLastBlockInThePageCache() async throws {
        let (job, file) = try await openedPartial()
        try XCTSkipUnless(takesDirectWrites(job.partialPath), "\(directory)'s file system takes no direct writes")
        let size = 8 << 20
        _ = try await write(Array(repeating: PartialFileWriter.batchBytes, count: size / PartialFileWriter.batchBytes) + [100], to: file, from: 0)
        let cached = try cachedPages(job.partialPath)
        // Through the page cache, all 2,049 pages would be there; directly, only the tail's.
        XCTAssertLessThanOrEqual(cached, 1, "\(cached) of the file's pages are in the page cache")
        let contents = try XCTUnwrap(FileManager.default.contents(atPath: job.partialPath))
        XCTAssertTrue(Array(contents) == pattern(size + 100, from: 0), "the file differs from what was written")
    }

    /// Whether the file system of `path` takes O_DIRECT (tmpfs before Linux 6.6, some FUSE file systems do not).
    private func takesDirectWrites(_ path: String) -> Bool {
        let fd = open(path, O_WRONLY)
        defer { close(fd) }
        return fd >= 0 && reachd_set_direct(fd, 1) == 0
    }

    /// How many of the file's pages are in the page cache (`mincore` of a mapping of it).
    private func cachedPages(_ path: String) throws -> Int {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno)!) }
        defer { close(fd) }
        var info = stat()
        fstat(fd, &info)
        let length = Int(info.st_size), page = Int(sysconf(Int32(_SC_PAGESIZE)))
        guard let mapping = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), mapping != MAP_FAILED else { throw POSIXError(.init(rawValue: errno)!) }
        defer { munmap(mapping, length) }
        var resident = [UInt8](repeating: 0, count: (length + page - 1) / page)
        guard mincore(mapping, length, &resident) == 0 else { throw POSIXError(.init(rawValue: errno)!) }
        return resident.filter { $0 & 1 != 0 }.count
    }
}
