import Foundation
import ReachdClient
import ReachdProtocol
import ReachdTransferModel
import XCTest

/// reachd-transfers as a client of reachd (`--verdicts reachd`): per-host verdicts from reachd's socket and no
/// netlink socket of its own; a running download stops when reachd says its route turned metered; while reachd
/// is gone jobs wait, saying why, and they go on once it is back.
final class TransfersThroughReachdIntegrationTests: XCTestCase {
    private var lab: TransferLab!

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    func testVerdictsComeFromReachdAndJobsWaitWhileItIsGone() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        try lab.lab.startDaemon()
        try lab.startDaemon(config: "[downloads]\nmetered_threshold = 1048576\n",
                            arguments: ["--verdicts", "reachd", "--reachd-socket", lab.lab.socketPath])
        XCTAssertTrue(lab.log.contains("per-host verdicts from reachd at \(lab.lab.socketPath)"), lab.log)
        XCTAssertEqual(try netlinkSockets(of: try daemonPID()), 0, "no netlink watcher of its own")

        let sum = try lab.serve("big.bin", bytes: 12 << 20)
        let id = try lab.add(lab.url("big.bin?rate=4000000"), output: lab.out + "/big.bin", ["--sha256", sum])
        try lab.waitFor(id, "running with 2 MB on disk") { $0.state == .running && $0.bytesReceived > 2_000_000 }
        try lab.eth0Down()
        let paused = try lab.waitFor(id, "deferred after reachd saw eth0 go down") { $0.state == .deferred }
        XCTAssertTrue((paused.reason ?? "").contains("metered (wwan0)"), paused.reason ?? "")

        // reachd stops: the job waits and says why, even when the unmetered route is back.
        _ = lab.lab.stopDaemon()
        try lab.eth0Up()
        let waiting = try lab.waitFor(id, "waiting for reachd") { ($0.reason ?? "").contains("reachd is not running") }
        XCTAssertNotEqual(waiting.state, .running)
        XCTAssertNotEqual(waiting.state, .completed)

        // reachd is back: the connection is made again, and the job completes over eth0.
        try lab.lab.startDaemon()
        let done = try lab.waitFor(id, "completed once reachd is back") { $0.state == .completed }
        XCTAssertEqual(done.bytesReceived, 12 << 20)
        XCTAssertEqual(try lab.sha256(lab.out + "/big.bin"), sum)
    }

    func testAutomaticFallsBackToItsOwnWatcherWithoutReachd() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        try lab.startDaemon(arguments: ["--verdicts", "auto", "--reachd-socket", lab.lab.directory + "/no-reachd.sock"])
        XCTAssertTrue(lab.log.contains("routes are judged in-process"), lab.log)
        XCTAssertGreaterThan(try netlinkSockets(of: try daemonPID()), 0)
        let sum = try lab.serve("a.bin", bytes: 1000)
        let id = try lab.add(lab.url("a.bin"), output: lab.out + "/a.bin")
        try lab.waitFor(id, "completed") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/a.bin"), sum)
    }

    private func daemonPID() throws -> Int32 { try XCTUnwrap(lab.daemonPID) }

    /// The netlink sockets among `pid`'s descriptors (socket inodes that /proc/net/netlink of its namespace lists).
    private func netlinkSockets(of pid: Int32) throws -> Int {
        let table = try String(contentsOfFile: "/proc/\(pid)/net/netlink", encoding: .utf8)
        let inodes = Set(table.split(separator: "\n").dropFirst().compactMap { $0.split(separator: " ", omittingEmptySubsequences: true).last })
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
        return descriptors.filter { fd in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                  target.hasPrefix("socket:[") else { return false }
            return inodes.contains(Substring(target.dropFirst(8).dropLast()))
        }.count
    }
}
