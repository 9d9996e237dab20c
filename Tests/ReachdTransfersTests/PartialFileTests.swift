import Foundation
import NIOCore
import ReachdModel
@testable import ReachdTransfers
import ReachdTransferModel
import XCTest

/// The partial file as its own type: its size, writes appended from where it ends, flush, truncation, and the rename
/// into place, which on failure leaves the partial file and says why with the kernel's errno.
final class PartialFileTests: XCTestCase {
    private var directory = ""
    private var files: UserFiles!

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "partial-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/state", withIntermediateDirectories: true)
        files = UserFiles(guarded: [directory + "/state"])
    }

    override func tearDown() async throws {
        files.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func job(output: String) -> Job {
        Job(id: "0123456789abcdef", sequence: 1, spec: DownloadSpec(url: "http://a.test/f", output: output),
            owner: Owner(uid: 0, gid: 0), created: Timestamp(microseconds: 0))
    }

    /// Writes `pieces` (one buffer each) at `position` through the writer the fetcher uses.
    private func write(_ pieces: [String], to file: PartialFile, at position: Int64) async throws {
        var writer = PartialFileWriter(file: file, position: position)
        try await writer.submit(pieces.map { ByteBuffer(string: $0) }, bytes: pieces.reduce(0) { $0 + $1.utf8.count })
        try await writer.finish()
        XCTAssertEqual(writer.written, position + Int64(pieces.reduce(0) { $0 + $1.utf8.count }))
    }

    private func contents(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    func testItsSizeIsWhatWasWrittenAndWritesAppendFromThere() async throws {
        let job = job(output: directory + "/out.bin")
        try await files.createPartial(for: job)
        let file = try await PartialFile.open(for: job, files: files)
        XCTAssertEqual(file.path, job.partialPath)
        let empty = try await file.size()
        XCTAssertEqual(empty, 0)
        try await write(["ab", "cd"], to: file, at: 0)
        let first = try await file.size()
        XCTAssertEqual(first, 4)
        try await write(["ef"], to: file, at: first)
        let second = try await file.size()
        XCTAssertEqual(second, 6)
        XCTAssertEqual(contents(job.partialPath), "abcdef")
        // Measured the same way when it is not open.
        let measured = await PartialFile.size(of: job, files: files)
        XCTAssertEqual(measured, 6)
    }

    func testAMissingPartialFileMeasuresZeroAndOpeningCreatesIt() async throws {
        let job = job(output: directory + "/out.bin")
        let missing = await PartialFile.size(of: job, files: files)
        XCTAssertEqual(missing, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: job.partialPath))
        _ = try await PartialFile.open(for: job, files: files)
        XCTAssertTrue(FileManager.default.fileExists(atPath: job.partialPath))
    }

    func testSyncKeepsTheBytesAndTruncateEmptiesIt() async throws {
        let job = job(output: directory + "/out.bin")
        let file = try await PartialFile.open(for: job, files: files)
        try await write(["hello"], to: file, at: 0)
        try await file.sync()
        XCTAssertEqual(contents(job.partialPath), "hello")
        try await file.truncate()
        let size = try await file.size()
        XCTAssertEqual(size, 0)
        XCTAssertEqual(contents(job.partialPath), "")
    }

    func testMovingIntoPlaceReplacesTheOutput() async throws {
        let job = job(output: directory + "/out.bin")
        try "old".write(toFile: job.file, atomically: false, encoding: .utf8)
        let file = try await PartialFile.open(for: job, files: files)
        try await write(["new"], to: file, at: 0)
        try await file.moveIntoPlace(at: job.file)
        XCTAssertEqual(contents(job.file), "new")
        XCTAssertFalse(FileManager.default.fileExists(atPath: job.partialPath))
        let left = await PartialFile.size(of: job, files: files)
        XCTAssertEqual(left, 0)
    }

    func testAFailedRenameLeavesThePartialFileAndSaysWhyWithItsErrno() async throws {
        // The output is a directory with something in it: a file cannot be renamed over it.
        let job = job(output: directory + "/out.bin")
        try FileManager.default.createDirectory(atPath: job.file + "/inside", withIntermediateDirectories: true)
        let file = try await PartialFile.open(for: job, files: files)
        try await write(["kept"], to: file, at: 0)
        do {
            try await file.moveIntoPlace(at: job.file)
            XCTFail("a file was renamed over a directory")
        } catch {
            // `error` is a FileError by the signature: no downcast.
            XCTAssertEqual(error.errno?.rawValue, EISDIR, "\(error)")
            XCTAssertTrue(error.description.hasPrefix("cannot rename \(job.partialPath) to \(job.file): "), error.description)
        }
        XCTAssertEqual(contents(job.partialPath), "kept")
        var isDirectory: ObjCBool = false
        XCTAssertTrue(FileManager.default.fileExists(atPath: job.file, isDirectory: &isDirectory) && isDirectory.boolValue)
    }

    func testAClientsFileIsNotMovedIntoAGuardedDirectory() async throws {
        let job = job(output: directory + "/out.bin"), guarded = directory + "/state/jobs.sqlite"
        let file = try await PartialFile.open(for: job, files: files)
        do {
            try await file.moveIntoPlace(at: guarded)
            XCTFail("a client's download was moved into the state directory")
        } catch {
            XCTAssertEqual(error.errno?.rawValue, EACCES, "\(error)")
            XCTAssertTrue(error.isPermission)
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: job.partialPath))
        XCTAssertFalse(FileManager.default.fileExists(atPath: guarded))
    }
}
