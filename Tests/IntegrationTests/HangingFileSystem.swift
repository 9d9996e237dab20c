import Foundation
import XCTest

/// Tests/Support/hanging_fs.py mounted in a lab's directory: a FUSE file system passing through to a directory, whose
/// statfs (or, with `writesHangPast`, writes past that many bytes of a file) wait until released: an NFS server that
/// stopped answering. Mounted before the daemon starts (`ip netns exec` copies the mount table).
final class HangingFileSystem {
    let mountPoint: String
    private let release: String
    private let log: String
    private let process: Process

    /// Whether python3-fuse and /dev/fuse are there (else the tests that need it skip).
    static var available: Bool {
        FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/fuse.py") && FileManager.default.fileExists(atPath: "/dev/fuse")
    }

    init(in lab: TransferLab, writesHangPast: Int? = nil) throws {
        mountPoint = lab.lab.directory + "/nfs"
        release = lab.lab.directory + "/release"
        let backing = lab.lab.directory + "/nfs-backing"
        for directory in [mountPoint, backing] { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        _ = try lab.lab.run("chown \(lab.daemonUID):\(lab.daemonGID) \(backing) && chmod 755 \(backing)")
        guard mkfifo(release, 0o600) == 0 else { throw LabError("mkfifo \(release)") }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../Support/hanging_fs.py").standardized.path
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script, backing, mountPoint, release] + (writesHangPast.map { [String($0)] } ?? [])
        let log = lab.lab.directory + "/hanging_fs.log"
        self.log = log
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        let mountPoint = mountPoint
        try eventually("the FUSE file system mounted", detail: (try? String(contentsOfFile: log, encoding: .utf8)) ?? "") {
            (try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)).contains(" \(mountPoint) ")
        }
    }

    /// Waits until a write hangs (with `writesHangPast`: a write past that many bytes came).
    func waitForHangingWrite() throws {
        try eventually("a write to hang in the FUSE file system") {
            ((try? String(contentsOfFile: self.log, encoding: .utf8)) ?? "").contains("write hangs at ")
        }
    }

    /// Lets every call answer (nothing happens when it was let go already).
    func releaseCalls() {
        let fd = open(release, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = write(fd, "go\n", 3)
        close(fd)
    }

    /// Releases the calls, unmounts and ends the file system.
    func tearDown(_ lab: TransferLab) {
        releaseCalls()
        _ = try? lab.lab.run("umount -l \(mountPoint)")
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}
