import Foundation
import ReachdTransferModel
import XCTest

/// Faults on reachd-transfers' job table under a running queue: its file system full (a real tmpfs), I/O errors and a
/// read-only file system (writes to `jobs.sqlite` failed by Tests/Support/table_faults.c: a real read-only remount is
/// refused while the table is open for writing), and a damaged table at start. The queue goes on for what it can,
/// says what failed, confirms no job it cannot keep, writes what memory held once the fault goes, and sets a damaged
/// table aside.
final class JobTableFaultIntegrationTests: XCTestCase {
    private var lab: TransferLab!

    override func setUpWithError() throws {
        lab = try TransferLab()
        try lab.startTestServer()
    }

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    func testTheQueueGoesOnThroughIOErrorsAndWritesItsChangesAfter() throws {
        try checkTheQueueGoesOn(faulting: "5", cause: "SQLite error 10: disk I/O error")
    }

    func testTheQueueGoesOnThroughAReadOnlyFileSystemAndWritesItsChangesAfter() throws {
        try checkTheQueueGoesOn(faulting: "30", cause: "SQLite error 10: disk I/O error")
    }

    /// The state directory is a 2 MB tmpfs, filled up while a transfer runs.
    func testTheQueueGoesOnThroughAFullFileSystemAndWritesItsChangesAfter() throws {
        try lab.smallDisk(at: lab.stateDirectory, size: "2M")
        try lab.startDaemon()
        let filler = lab.stateDirectory + "/filler"
        try checkTheQueueGoesOn(cause: "SQLite error 13: database or disk is full",
                                fault: { _ = try? self.lab.lab.run("dd if=/dev/zero of=\(filler) bs=64k 2>/dev/null; true") },
                                repair: { unlink(filler) })
    }

    /// A job runs to its end while the table cannot be written (`fault`); it is not lost, the list says why, a new
    /// job is refused with the reason; after `repair` the notice goes, and a daemon killed then (no shutdown writes)
    /// loads the job as completed.
    private func checkTheQueueGoesOn(faulting code: String, cause: String) throws {
        let library = lab.lab.directory + "/table_faults.so"
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../Support/table_faults.c").standardized.path
        try lab.lab.run("cc -shared -fPIC -O2 -o \(library) \(source) && chmod 755 \(library)")
        let control = lab.lab.directory + "/table-fault"
        try lab.startDaemon(environment: ["LD_PRELOAD": library, "REACHD_TABLE_FAULT_FILE": control])
        try checkTheQueueGoesOn(cause: cause, fault: { try "\(code)\n".write(toFile: control, atomically: true, encoding: .utf8) },
                                repair: { unlink(control) })
    }

    private func checkTheQueueGoesOn(cause: String, fault: () throws -> Void, repair: () -> Void) throws {
        let sum = try lab.serve("f.bin", bytes: 3 << 20)
        let id = try lab.add(lab.url("f.bin?rate=3000000"), output: lab.out + "/f.bin", ["--sha256", sum])
        try lab.waitFor(id, "running") { $0.state == .running && $0.bytesMoved > 0 }
        try fault()

        try lab.waitFor(id, "completed while the table cannot be written") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/f.bin"), sum)
        let listed = try lab.download(["list"])
        XCTAssertEqual(listed.status, 0, listed.err)
        XCTAssertTrue(listed.out.contains("\(id)  completed"), listed.out)
        XCTAssertTrue(listed.err.contains("warning: the job table cannot be written since "), listed.err)
        XCTAssertTrue(listed.err.contains(cause), listed.err)
        let refused = try lab.download(["add", lab.url("f.bin"), "--output", lab.out + "/g.bin"])
        XCTAssertNotEqual(refused.status, 0, "a job the table cannot keep is not confirmed")
        XCTAssertTrue(refused.err.contains("the job table cannot be written"), refused.err)
        XCTAssertTrue(lab.log.contains("the job table cannot be written"), lab.log)

        repair()
        try eventually("the notice gone", detail: lab.log.suffix(2000).description) {
            try lab.download(["list"]).err.isEmpty
        }
        XCTAssertTrue(lab.log.contains("the job table is written again"), lab.log)
        lab.stopDaemon(signal: SIGKILL)
        try lab.startDaemon()
        let shown = try lab.download(["show", id, "--json"])
        XCTAssertTrue(shown.out.contains("\"state\":\"completed\""), "the completion written after the fault: \(shown.out)")
    }

    /// A `jobs.sqlite` that is no database: set aside with its bytes, said in the log and the list, and the queue
    /// starts empty and works.
    func testADamagedTableIsSetAsideAndTheQueueStartsEmpty() throws {
        try FileManager.default.createDirectory(atPath: lab.stateDirectory, withIntermediateDirectories: true)
        let junk = Data(String(repeating: "this is no job table ", count: 400).utf8)
        try junk.write(to: URL(fileURLWithPath: lab.stateDirectory + "/jobs.sqlite"))
        try lab.startDaemon()
        let listed = try lab.download(["list"])
        XCTAssertTrue(listed.err.contains("the job table was damaged at start and set aside as \(lab.stateDirectory)/jobs.sqlite.damaged-"),
                      listed.err)
        let aside = try FileManager.default.contentsOfDirectory(atPath: lab.stateDirectory).filter { $0.hasPrefix("jobs.sqlite.damaged-") }
        XCTAssertEqual(aside.count, 1, "\(aside)")
        XCTAssertEqual(FileManager.default.contents(atPath: lab.stateDirectory + "/" + (aside.first ?? "")), junk)
        XCTAssertTrue(lab.log.contains("the job table was damaged"), lab.log)
        let sum = try lab.serve("d.bin", bytes: 100_000)
        let id = try lab.add(lab.url("d.bin"), output: lab.out + "/d.bin")
        try lab.waitFor(id, "completed") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/d.bin"), sum)
    }
}
