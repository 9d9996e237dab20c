import Foundation
import ReachdClient
import ReachdModel
import ReachdProtocol
import XCTest

/// A hostile local user (nobody) floods reachd with host requests for names whose lookups never finish (the
/// only name server drops every query): no other user's verdicts wait for them, one connection cannot make the
/// daemon grow, and the limits count what was accepted.
final class ContentionIntegrationTests: XCTestCase {
    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Support/host_flood.py").standardized.path
    private var lab: NetLab!
    private var floods: [Process] = []

    override func setUpWithError() throws {
        lab = try NetLab.make()
        try lab.addUplink("eth0", "10.1.0", metric: 100)
        try lab.addUplink("wwan0", "10.3.0", metric: 200)
        // The name server is reached through the peer, which does not forward: every query is dropped unanswered.
        try lab.peerIP("addr add 10.1.0.1/24 dev eth0")
        try lab.ip("route add 10.9.9.9/32 via 10.1.0.1 dev eth0")
        try lab.hostsFile(["victim.test": "192.0.2.80", "other.test": "192.0.2.81"])
        try "nameserver 10.9.9.9\noptions timeout:5 attempts:1\n".write(toFile: "/etc/netns/\(lab.host)/resolv.conf", atomically: true, encoding: .utf8)
        try lab.startDaemon()
    }

    override func tearDown() {
        for flood in floods where flood.isRunning {
            flood.terminate()
            flood.waitUntilExit()
        }
        lab?.tearDown()
    }

    /// Starts `host_flood.py ARGUMENTS` as nobody in the daemon's namespace; its reply lines.
    private func flood(_ arguments: [String]) throws -> LineReader {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", lab.host, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             "/usr/bin/python3", Self.script, lab.socketPath] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        floods.append(process)
        let lines = LineReader(pipe.fileHandleForReading)
        XCTAssertEqual(try lines.next(timeout: 30), "connected")
        return lines
    }

    /// Queries that reached the name server's side of eth0 (each lookup sends some, none is answered).
    private func queriesSent() throws -> Int {
        let json = try lab.run("ip -n \(lab.peer) -s -j link show eth0")
        let links = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        let stats = try XCTUnwrap(links.first?["stats64"] as? [String: Any])
        return try XCTUnwrap((stats["rx"] as? [String: Any])?["packets"] as? Int)
    }

    private func residentKiB() throws -> Int {
        let pid = try XCTUnwrap(lab.daemonPID)
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        return try XCTUnwrap(Int(line.split(separator: " ")[1]))
    }

    /// Another user's 40 names hang in the resolver; A's watched host still follows a route change at once, and
    /// A's new name is resolved without waiting for them. (Before: A's host event came after B's lookups, about
    /// 40 × 5 s / 2 threads = 100 s; A's status waited as long.)
    func testOneUsersHangingNamesDelayNoOtherUsersVerdicts() throws {
        let host = try lab.subscribe(host: "victim.test")
        XCTAssertEqual(host.initial.verdict.interface, "eth0")
        let internet = try lab.subscribe()
        let before = try queriesSent()
        _ = try flood(["status", "1", "40", "b"])
        try eventually("B's lookups reach the name server") { try queriesSent() >= before + 2 }

        try lab.ip("route del default via 10.1.0.1 dev eth0")
        try internet.waitFor("internet via wwan0") { $0.interface == "wwan0" }
        let internetSeen = Date()
        // Generous for a loaded machine, and far below what B's queue of lookups would take.
        let moved = try host.waitFor("victim.test via wwan0", timeout: 20) { $0.interface == "wwan0" }
        XCTAssertTrue(moved.verdict.metered)
        print("victim.test's event came \(Int(Date().timeIntervalSince(internetSeen) * 1000)) ms after the internet's")

        let connection = try ReachdConnection(path: lab.socketPath)
        let other = try connection.verdict(for: Request(op: .status, hosts: ["other.test"]), timeout: 20)
        XCTAssertEqual(other.verdict.addresses, [IPAddress("192.0.2.81")!])
    }

    /// Another user watches 1,000 names that hang in the resolver; after a change of the internet verdict this user's
    /// watched name is resolved again in this user's own turn. (Before: every user's watched names were resolved
    /// again in reachd's one queue, two at a time, so this name waited behind the hanging ones: 52 s for 60.)
    func testOneUsersHangingWatchedNamesDelayNoOtherUsersResolution() throws {
        let host = try lab.subscribe(host: "victim.test")
        let before = try queriesSent()
        _ = try flood(["subscribe", "1", "1", "1000", "w"])
        try eventually("B's lookups reach the name server") { try queriesSent() >= before + 2 }
        // victim.test moves. Written in place: the namespace's hosts file is a bind mount of this very file.
        try "127.0.0.1 localhost\n192.0.2.99 victim.test\n192.0.2.81 other.test\n"
            .write(toFile: "/etc/netns/\(lab.host)/hosts", atomically: false, encoding: .utf8)
        let changed = Date()
        try lab.ip("route del default via 10.1.0.1 dev eth0")
        // Generous for a loaded machine, and far below what B's lookups would take in one queue with this name.
        let moved = try host.waitFor("victim.test at its new address", timeout: 20) { $0.addresses == [IPAddress("192.0.2.99")!] }
        XCTAssertEqual(moved.verdict.interface, "wwan0")
        print("victim.test's new address came \(Int(Date().timeIntervalSince(changed) * 1000)) ms after the route change")
    }

    /// One connection sends 60,000 host requests for distinct hanging names: reachd takes 16 at a time (the
    /// rest stay unread), so it does not grow; past 64 waiting requests of one user, more are refused at once.
    func testOneUsersFloodOfHangingNamesIsBounded() throws {
        let idle = try residentKiB()
        _ = try flood(["status", "1", "60000", "c"])
        var peak = idle
        // The daemon before this bound grew by 550 MB in 6 s under this flood: watching 8 s shows it no longer does.
        let end = Date().addingTimeInterval(8)
        while Date() < end {
            peak = max(peak, try residentKiB())
            usleep(100_000)
        }
        XCTAssertLessThan(peak - idle, 30 * 1024, "reachd grew from \(idle) KiB to \(peak) KiB")
        print("under 60,000 pipelined lookups reachd grew from \(idle) KiB to at most \(peak) KiB")

        // Five more connections of the same user: past 64 waiting requests, each further one is refused.
        let refused = try flood(["status", "5", "20", "d"])
        XCTAssertEqual(try refused.next(timeout: 20), "reply error too_many_requests")

        // Root is served meanwhile.
        let connection = try ReachdConnection(path: lab.socketPath)
        let other = try connection.verdict(for: Request(op: .status, hosts: ["other.test"]), timeout: 20)
        XCTAssertEqual(other.verdict.addresses, [IPAddress("192.0.2.81")!])
    }

    /// 20 pipelined subscribes of 300 hanging names on one connection: those that would take it past 4,096
    /// subscriptions are refused at once, counting the ones still resolving. (Before: all were accepted.)
    func testSubscriptionsCountFromTheirAcceptance() throws {
        continueAfterFailure = false
        let replies = try flood(["subscribe", "1", "20", "300", "s"])
        // 13 are accepted and wait (3,900 subscriptions); the 14th would make 4,200: it and the six after it are
        // refused at once.
        for _ in 0..<7 {
            XCTAssertEqual(try replies.next(timeout: 20), "reply error bad_request")
        }
    }

    /// One user's host subscriptions are bounded over all its connections: 3 connections each asking for 4,096
    /// (the most one connection may hold) get 8,192 in all, the rest refused with `too_many_requests`.
    func testOneUsersWatchedHostsAreBoundedOverAllConnections() throws {
        let replies = try flood(["subscribe", "3", "8", "512", "literal"])
        var seen: [String: Int] = [:]
        while seen.values.reduce(0, +) < 24 { seen[try XCTUnwrap(try replies.next(timeout: 60)), default: 0] += 1 }
        XCTAssertEqual(seen, ["reply subscribed -": 16, "reply error too_many_requests": 8])
        let internet = try lab.subscribe()
        XCTAssertEqual(internet.initial.verdict.interface, "eth0", "root is served beside them")
    }
}
