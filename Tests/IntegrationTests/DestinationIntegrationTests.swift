import Foundation
import ReachdTransferModel
import XCTest

/// A destination whose file system does not answer (Tests/Support/hanging_fs.py, a FUSE file system passing through
/// to a directory, whose statfs or writes wait until released: an NFS server that stopped answering): `--storage-not-low`
/// looks at the free space off the scheduler, and a write that does not return ends its attempt and holds that
/// directory's jobs, with a reason, until it does; the others go on.
final class DestinationIntegrationTests: XCTestCase {
    private var lab: TransferLab!
    private var fileSystem: Process?
    private var mountPoint = "", release = ""

    override func tearDown() {
        if let fileSystem {
            releaseFileSystem()
            _ = try? lab.lab.run("umount -l \(mountPoint)")
            if fileSystem.isRunning { fileSystem.terminate() }
            fileSystem.waitUntilExit()
        }
        lab?.tearDown()
        lab = nil
    }

    override func setUpWithError() throws {
        guard FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/fuse.py"), FileManager.default.fileExists(atPath: "/dev/fuse") else {
            throw XCTSkip("python3-fuse and /dev/fuse are needed")
        }
        lab = try TransferLab()
    }

    func testADestinationThatDoesNotAnswerHoldsOnlyItsOwnJob() throws {
        try mountHangingFileSystem()
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

        releaseFileSystem()
        // Looked at again once the look under way answers: 1 MiB free, short of the 64 MiB margin.
        let judged = try lab.waitFor(hung, "judged on its free space") { ($0.reason ?? "").contains("free at the destination") }
        XCTAssertEqual(judged.state, .deferred)
    }

    /// Two downloads whose writes hang past 1 MiB take both of the queue's two slots; each attempt ends once its write
    /// has waited 10 s, and their directory's jobs wait (a third one there does not start) while a download elsewhere
    /// completes. Released, the writes return and the two go on from their partial files.
    func testWritesThatDoNotReturnHoldOnlyTheirDirectorysJobs() throws {
        try mountHangingFileSystem(writesHangPast: 1 << 20)
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

        releaseFileSystem()
        for (id, name) in zip(hung + [third], ["w1", "w2", "w3"]) {
            try lab.waitFor(id, "completed once the writes returned") { $0.state == .completed }
            XCTAssertEqual(try lab.sha256(mountPoint + "/\(name).bin"), sum)
        }
    }

    /// Mounts the file system at `mountPoint` before the daemon starts (`ip netns exec` copies the mount table); with
    /// `writesHangPast`, writes past that many bytes hang instead of statfs.
    private func mountHangingFileSystem(writesHangPast: Int? = nil) throws {
        mountPoint = lab.lab.directory + "/nfs"
        release = lab.lab.directory + "/release"
        let backing = lab.lab.directory + "/nfs-backing"
        for directory in [mountPoint, backing] { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        _ = try lab.lab.run("chown \(lab.daemonUID):\(lab.daemonGID) \(backing) && chmod 755 \(backing)")
        guard mkfifo(release, 0o600) == 0 else { throw LabError("mkfifo \(release)") }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../Support/hanging_fs.py").standardized.path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script, backing, mountPoint, release] + (writesHangPast.map { [String($0)] } ?? [])
        let log = lab.lab.directory + "/hanging_fs.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        fileSystem = process
        try eventually("the FUSE file system mounted", detail: (try? String(contentsOfFile: log, encoding: .utf8)) ?? "") {
            (try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)).contains(" \(mountPoint) ")
        }
    }

    /// Lets every statfs answer (nothing happens when it was let go already).
    private func releaseFileSystem() {
        let fd = open(release, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = write(fd, "go\n", 3)
        close(fd)
    }
}
