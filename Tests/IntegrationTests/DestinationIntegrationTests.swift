import Foundation
import ReachdTransferModel
import XCTest

/// A destination whose file system does not answer (Tests/Support/hanging_fs.py, a FUSE file system passing through
/// to a directory, whose statfs or writes wait until released: an NFS server that stopped answering): `--storage-not-low`
/// looks at the free space off the scheduler, and a write that does not return ends its attempt and holds that
/// directory's jobs, with a reason, until it does; the others go on.
final class DestinationIntegrationTests: XCTestCase {
    private var lab: TransferLab!
    private var fileSystem: HangingFileSystem?
    private var mountPoint: String { fileSystem?.mountPoint ?? "" }

    override func setUpWithError() throws {
        guard HangingFileSystem.available else { throw XCTSkip("python3-fuse and /dev/fuse are needed") }
        lab = try TransferLab()
    }

    override func tearDown() {
        if let lab { fileSystem?.tearDown(lab) }
        lab?.tearDown()
        lab = nil
    }

    func testADestinationThatDoesNotAnswerHoldsOnlyItsOwnJob() throws {
        fileSystem = try HangingFileSystem(in: lab)
        try lab.startTestServer()
        try lab.startDaemon()
        let sum = try lab.serve("h.bin", bytes: 300_000)
        let hung = try lab.add(lab.url("h.bin"), output: mountPoint + "/h.bin", ["--storage-not-low"])
        let other = try lab.add(lab.url("h.bin"), output: lab.out + "/o.bin", ["--storage-not-low"])
        _ = try lab.waitFor(other, "completed beside the destination that does not answer") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/o.bin"), sum)
        _ = try lab.waitFor(hung, "waiting for its destination") {
            $0.state == .deferred && $0.reason == "waiting: the file system of \(self.mountPoint) does not answer"
        }

        fileSystem?.releaseCalls()
        // Looked at again once the look under way answers: 1 MiB free, short of the 64 MiB margin.
        let judged = try lab.waitFor(hung, "judged on its free space") { ($0.reason ?? "").contains("free at the destination") }
        XCTAssertEqual(judged.state, .deferred)
    }

    /// Two downloads whose writes hang past 1 MiB take both of the queue's two slots; each attempt ends once its write
    /// has waited 10 s, and their directory's jobs wait (a third one there does not start) while a download elsewhere
    /// completes. Released, the writes return and the two go on from their partial files.
    func testWritesThatDoNotReturnHoldOnlyTheirDirectorysJobs() throws {
        fileSystem = try HangingFileSystem(in: lab, writesHangPast: 1 << 20)
        try lab.startTestServer()
        try lab.startDaemon()
        let sum = try lab.serve("w.bin", bytes: 3 << 20)
        let hung = try ["1", "2"].map { try lab.add(lab.url("w.bin"), output: mountPoint + "/w\($0).bin", ["--sha256", sum]) }
        for id in hung { try lab.waitFor(id, "started") { $0.state == .running || $0.reason?.contains("does not answer") == true } }
        let third = try lab.add(lab.url("w.bin"), output: mountPoint + "/w3.bin", ["--sha256", sum])
        let other = try lab.add(lab.url("w.bin"), output: lab.out + "/o.bin", ["--sha256", sum])
        try lab.waitFor(other, "completed beside the writes that do not return") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/o.bin"), sum)
        for id in hung + [third] {
            try lab.waitFor(id, "waiting for its destination") {
                $0.state == .deferred && $0.reason == "waiting: the file system of \(self.mountPoint) does not answer"
            }
        }
        XCTAssertEqual(lab.gets("w.bin").count, 3, "the two that hang and the other: the third never started")

        fileSystem?.releaseCalls()
        for (id, name) in zip(hung + [third], ["w1", "w2", "w3"]) {
            try lab.waitFor(id, "completed once the writes returned") { $0.state == .completed }
            XCTAssertEqual(try lab.sha256(mountPoint + "/\(name).bin"), sum)
        }
    }
}
