import Foundation
import ReachdClient
import ReachdProtocol
import ReachdTransferModel
import ReachdTransferProtocol
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
        try lab.waitFor(id, "running with 2 MB on disk") { $0.state == .running && $0.bytesMoved > 2_000_000 }
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
        XCTAssertEqual(done.bytesMoved, 12 << 20)
        XCTAssertEqual(try lab.sha256(lab.out + "/big.bin"), sum)
    }

    /// A job for a host whose last job just ended: the host is still subscribed on reachd's connection (reachd has
    /// no unsubscribe), its verdict went with that job, so it is asked for again instead of waiting for a change
    /// ("route … not known yet", as the system test's second upload once did).
    func testAHostWatchedAgainAfterItsLastJobGetsItsVerdict() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        try lab.lab.startDaemon()
        try lab.startDaemon(arguments: ["--verdicts", "reachd", "--reachd-socket", lab.lab.socketPath])
        _ = try lab.serve("a.bin", bytes: 20_000)
        for round in 1...3 {
            let id = try lab.add(lab.url("a.bin"), output: lab.out + "/a\(round).bin")
            let done = try lab.waitFor(id, "job \(round) completed") { $0.state.isTerminal }
            XCTAssertEqual(done.state, .completed, "round \(round): \(done.reason ?? "")")
        }
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

    /// Past reachd's 4,096 host subscriptions per connection, the next hosts are subscribed on another
    /// connection, without resubscribing the others, and their jobs say what reachd judged, never that reachd
    /// is not running (issue 22). The hosts are IP literals behind an unreachable route: no packet is sent.
    func testMoreHostsThanOneConnectionOfReachdTakes() throws {
        lab = try TransferLab()
        try lab.lab.ip("route add unreachable 10.77.0.0/16")
        try lab.lab.startDaemon()
        let arguments = ["--verdicts", "reachd", "--reachd-socket", lab.lab.socketPath]
        // 4,097 jobs on distinct hosts, written into the job table while the daemon is stopped: adding them one
        // by one takes minutes (each add re-decides every job).
        let config = "[downloads]\nmax_jobs_per_user = 5000\n"
        try lab.startDaemon(config: config, arguments: arguments)
        lab.stopDaemon()
        let script = lab.lab.directory + "/jobs.py"
        try """
            import sqlite3, sys, time
            db = sqlite3.connect(sys.argv[1])
            now = int(time.time() * 1e6)
            db.executemany("INSERT INTO job (id, sequence, url, output, state, priority, allowMetered, uid, gid, groups, "
                           "bytesReceived, attempts, created, updated) VALUES (?, ?, ?, ?, 'queued', 'normal', 0, 0, 0, '', 0, 0, ?, ?)",
                           [("%016x" % (n + 1), n + 1, "http://10.77.%d.%d/f" % (n >> 8, n & 255), "%s/f%d" % (sys.argv[2], n), now, now)
                            for n in range(4097)])
            db.commit()
            """.write(toFile: script, atomically: true, encoding: .utf8)
        try lab.lab.run("/usr/bin/python3 \(script) \(lab.stateDirectory)/jobs.sqlite \(lab.out)")
        try lab.startDaemon(config: config, arguments: arguments)

        func judged(_ id: String, _ what: String) throws {
            let job = try lab.waitFor(id, "judged by reachd", timeout: 60) { ($0.reason ?? "").contains("is not reachable (") }
            XCTAssertFalse((job.reason ?? "").contains("no verdict"), "\(what): \(job.reason ?? "")")
        }
        try judged(String(format: "%016x", 1), "the first host")
        try judged(String(format: "%016x", 4097), "the 4,097th host")
        // One more, as a client adds it: subscribed on its own.
        let added = try lab.client().job(TransferRequest(op: .add, download: DownloadSpec(url: "http://10.77.16.1/f", output: lab.out + "/g")))
        try judged(added.id, "a host added later")
        XCTAssertEqual(lab.log.components(separatedBy: "per-host verdicts from reachd at").count - 1, 2, "connected once per start, never again")
        XCTAssertEqual(try reachdConnections(of: try daemonPID()), 2, "ceil(4098 / 4096)")
    }

    private func daemonPID() throws -> Int32 { try XCTUnwrap(lab.daemonPID) }

    /// The connections of `pid` to reachd: reachd's ends (local address its socket path) whose peer is one of `pid`'s sockets.
    private func reachdConnections(of pid: Int32) throws -> Int {
        let inodes = Set(try socketInodes(of: pid))
        let table = try lab.lab.run("ip netns exec \(lab.lab.host) ss -xH")
        return table.split(separator: "\n").filter { line in
            let columns = line.split(separator: " ", omittingEmptySubsequences: true)
            return columns.count >= 8 && columns[4] == lab.lab.socketPath && inodes.contains(String(columns[7]))
        }.count
    }

    /// The inodes of the sockets among `pid`'s descriptors.
    private func socketInodes(of pid: Int32) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap { fd in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                  target.hasPrefix("socket:[") else { return nil }
            return String(target.dropFirst(8).dropLast())
        }
    }

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
