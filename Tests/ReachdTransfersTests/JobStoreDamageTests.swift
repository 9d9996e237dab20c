import Foundation
import ReachdModel
@testable import ReachdTransfers
import ReachdTransferModel
import XCTest

/// A damaged job table at start is set aside (renamed, its bytes kept) and a fresh one made; an intact one is opened.
final class JobStoreDamageTests: XCTestCase {
    private var directory = ""
    private let time = Timestamp(microseconds: 1_800_000_000_000_000)

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "jobstore-damage-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// 300 jobs, so that the table spans many pages; the store closed (its log folded into the file).
    private func fillTable() throws {
        let store = try JobStore(directory: directory)
        for n in 1...300 {
            try store.save(Job(id: String(format: "%016x", n), sequence: Int64(n),
                               spec: DownloadSpec(url: "http://a.test/\(n).bin", output: directory + "/\(n).bin"),
                               owner: Owner(uid: 1000, gid: 1000), created: time))
        }
    }

    func testAnIntactTableIsOpenedAsItIs() throws {
        try fillTable()
        let (store, setAside) = try JobStore.open(directory: directory, now: time)
        XCTAssertNil(setAside)
        XCTAssertEqual(try store.all().jobs.count, 300)
    }

    func testAFileThatIsNoDatabaseIsSetAsideWithItsBytes() throws {
        let junk = Data(String(repeating: "not a job table ", count: 512).utf8)
        try junk.write(to: URL(fileURLWithPath: directory + "/jobs.sqlite"))
        let (store, setAside) = try JobStore.open(directory: directory, now: time)
        XCTAssertEqual(setAside, directory + "/jobs.sqlite.damaged-\(Self.stamp(time))")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: setAside ?? "")), junk)
        XCTAssertEqual(try store.all().jobs, [], "a fresh table")
        try store.save(Job(id: "00000000000000aa", sequence: 1, spec: DownloadSpec(url: "http://a.test/x", output: directory + "/x"),
                           owner: Owner(uid: 1000, gid: 1000), created: time))
    }

    /// Pages overwritten in the middle of the file: SQLite's quick check finds it, and a second damage at the same
    /// second does not overwrite the first one set aside.
    func testAFileWithDamagedPagesIsSetAsideAndNothingSetAsideIsOverwritten() throws {
        try fillTable()
        let path = directory + "/jobs.sqlite"
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: path))
        let size = try handle.seekToEnd()
        XCTAssertGreaterThan(size, 16_384)
        try handle.seek(toOffset: 4096)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: Int(size) - 4096))
        try handle.close()
        let (_, first) = try JobStore.open(directory: directory, now: time)
        XCTAssertEqual(first, path + ".damaged-\(Self.stamp(time))")

        try Data("damaged again".utf8).write(to: URL(fileURLWithPath: path))
        let (_, second) = try JobStore.open(directory: directory, now: time)
        XCTAssertEqual(second, path + ".damaged-\(Self.stamp(time))-2")
        XCTAssertEqual(FileManager.default.contents(atPath: second ?? ""), Data("damaged again".utf8))
        XCTAssertGreaterThan(FileManager.default.contents(atPath: first ?? "")?.count ?? 0, 16_384, "the first kept")
    }

    private static func stamp(_ time: Timestamp) -> String { "\(time)".prefix(19).filter { $0.isNumber || $0 == "T" } + "Z" }
}
