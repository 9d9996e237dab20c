import Foundation
import Reachability
import ReachdModel
import XCTest

/// Host targets against the real kernel: names from the namespace's /etc/hosts, the kernel's route lookup
/// (RTM_GETROUTE) with policy rules and reject routes, and re-judging when routes or rules change.
final class HostIntegrationTests: XCTestCase {
    private var lab: NetLab!

    override func setUpWithError() throws {
        lab = try NetLab.make()
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.ip("addr add 2001:db8:1::2/64 dev eth0 nodad")
        try lab.addLink("wwan0", ipv4: "203.0.113.2/24")
        try lab.hostsFile([
            "far.test": "198.18.0.5",
            "onlink.test": "203.0.113.50",
            "self.test": "192.0.2.2",
            "v6.test": "2001:db8:1::50",
            "ruled.test": "198.19.1.1",
            "blocked.test": "198.18.5.5",
        ])
    }

    override func tearDown() {
        lab?.tearDown()
    }

    private func status(_ host: String) throws -> Verdict {
        try lab.subscribe(host: host).initial.verdict
    }

    func testHostReachedOverWWANWhileTheInternetIsWired() throws {
        try lab.ip("route add 198.18.0.0/15 via 203.0.113.1 dev wwan0")
        try lab.startDaemon()
        let host = try status("far.test")
        XCTAssertEqual(host.target, "far.test")
        XCTAssertEqual(host.status, .wwan)
        XCTAssertTrue(host.metered)
        XCTAssertEqual(host.meteredReason, "interface kind wwan")
        XCTAssertEqual(host.flags, [.reachable, .isWWAN])
        XCTAssertEqual(host.ipv4.gateway, IPAddress("203.0.113.1"))
        XCTAssertEqual(host.addresses, [IPAddress("198.18.0.5")!])
        let internet = try lab.subscribe().initial.verdict
        XCTAssertEqual(internet.status, .wired)
        XCTAssertFalse(internet.metered)

        let cli = try lab.reachctl(["status", "--host", "far.test"])
        XCTAssertEqual(cli.status, 0)
        XCTAssertEqual(cli.out, "far.test: reachable via WWAN (wwan0), metered (interface kind wwan)\n")
        XCTAssertEqual(try lab.reachctl(["wait", "--host", "far.test", "--unmetered", "--timeout", "0.5"]).status, 1)
        XCTAssertEqual(try lab.reachctl(["wait", "--unmetered", "--timeout", "0.5"]).status, 0, "the internet itself is unmetered")
    }

    func testReachctlWatchesSeveralHosts() throws {
        try lab.startDaemon()
        let (process, reader) = try lab.spawnReachctl(["watch", "--host", "far.test", "--host", "self.test"])
        defer { process.terminate() }
        XCTAssertTrue(try reader.next().contains("far.test: reachable via wired (eth0)"))
        XCTAssertTrue(try reader.next().contains("self.test: reachable via other link (lo)"))
        try lab.ip("route add 198.18.0.0/15 via 203.0.113.1 dev wwan0")
        XCTAssertTrue(try reader.next().contains("#2 far.test: reachable via WWAN (wwan0), metered"))
    }

    func testOnLinkLocalUnresolvableAndIPv6OnlyHosts() throws {
        try lab.startDaemon()
        // wwan0 was made last: the kernel may report its carrier a moment after the daemon started.
        let onlink = try lab.subscribe(host: "onlink.test").waitFor("wwan0 running") { $0.reachable }.verdict
        XCTAssertEqual(onlink.flags, [.reachable, .isDirect, .isWWAN])
        XCTAssertNil(onlink.ipv4.gateway)

        let own = try status("self.test")
        XCTAssertTrue(own.reachable)
        XCTAssertTrue(own.flags.contains(.isLocalAddress))

        let unknown = try status("nothing.test")
        XCTAssertFalse(unknown.reachable)
        XCTAssertEqual(unknown.flags, [])
        XCTAssertEqual(unknown.reason, "name not resolved")
        let cli = try lab.reachctl(["status", "--host", "nothing.test", "--json"])
        XCTAssertEqual(cli.status, 1)
        XCTAssertTrue(cli.out.contains("\"reason\":\"name not resolved\""), cli.out)

        let v6 = try status("v6.test")
        XCTAssertEqual(v6.status, .wired)
        XCTAssertEqual(v6.family, .ipv6)
        XCTAssertTrue(v6.flags.contains(.isDirect))
        XCTAssertEqual(v6.ipv4.reason, "no IPv4 address")

        let literal = try status("203.0.113.77")
        XCTAssertEqual(literal.status, .wwan)
    }

    func testPolicyRulesAndRejectRoutesDecide() throws {
        try lab.ip("route add unreachable 198.18.5.0/24")
        try lab.startDaemon()
        let blocked = try status("blocked.test")
        XCTAssertFalse(blocked.reachable)
        XCTAssertEqual(blocked.reason, "route to 198.18.5.5 is unreachable")

        let client = try lab.subscribe(host: "ruled.test")
        XCTAssertEqual(client.initial.verdict.status, .wired, "main table: default via eth0")
        try lab.ip("route add default via 203.0.113.1 dev wwan0 table 100")
        try lab.ip("rule add to 198.19.0.0/16 table 100")
        let ruled = try client.waitFor("the rule sends ruled.test via wwan0") { $0.status == .wwan }
        XCTAssertEqual(ruled.verdict.target, "ruled.test")
        XCTAssertEqual(ruled.sequence, client.initial.sequence + 1)
    }

    /// A rule that routes one user's packets otherwise (`ip rule add uidrange`), added while reachd runs: that user's
    /// `status --host` is the kernel's route for them (the caller's uid in the lookup), root's stays the main table's.
    func testAUsersHostVerdictIsTheKernelsRouteForThatUser() throws {
        try lab.startDaemon()
        try lab.ip("route add default via 203.0.113.1 dev wwan0 table 100")
        try lab.ip("rule add uidrange 65534-65534 lookup 100")
        chmod(lab.directory, 0o755)
        let nobody = try waited(for: { try Self.asNobody(NetLab.binary("reachctl"), ["status", "--host", "far.test", "--socket", lab.socketPath]) },
                                until: { $0.out.contains("(wwan0)") })
        XCTAssertEqual(nobody.out, "far.test: reachable via WWAN (wwan0), metered (interface kind wwan)\n", nobody.err)
        let root = try lab.reachctl(["status", "--host", "far.test"])
        XCTAssertTrue(root.out.hasPrefix("far.test: reachable via wired (eth0)"), "root's route is the main table's: \(root.out)")
        XCTAssertEqual(try status("far.test").status, .wired, "a watched host stays reachd's own")
    }

    /// A user's watched host follows the kernel's routes for that user, and each user's hosts are their own: a uid
    /// rule added while nobody watches far.test moves nobody's verdict to wwan0 and back when it goes, each an event
    /// of nobody's own sequence, while root, watching the same host, is told nothing until its own route changes.
    func testAUsersWatchedHostFollowsTheRulesThatRouteThatUser() throws {
        try lab.startDaemon()
        try lab.ip("route add default via 203.0.113.1 dev wwan0 table 100")
        chmod(lab.directory, 0o755)
        let root = try lab.subscribe(host: "far.test")
        let (process, lines) = try lab.spawnReachctl(["watch", "--json", "--host", "far.test"], asUID: 65534)
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let first = try lines.next()
        XCTAssertTrue(first.contains("\"interface\":\"eth0\""), first)
        try lab.ip("rule add uidrange 65534-65534 lookup 100")
        let moved = try lines.next()
        XCTAssertTrue(moved.contains("\"interface\":\"wwan0\"") && moved.contains("\"sequence\":2"), moved)
        try lab.ip("rule del uidrange 65534-65534 lookup 100")
        let back = try lines.next()
        XCTAssertTrue(back.contains("\"interface\":\"eth0\"") && back.contains("\"sequence\":3"), back)
        try lab.ip("route add 198.18.0.0/15 via 203.0.113.1 dev wwan0")
        try root.waitFor("root's far.test via wwan0") { $0.status == .wwan }
        XCTAssertEqual(root.events.map(\.sequence), [root.initial.sequence + 1], "root was told of its own change alone")
    }

    private static func asNobody(_ binary: String, _ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        try CommandLineIntegrationTests.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", binary] + arguments)
    }

    func testWatchedHostFollowsRouteChanges() throws {
        try lab.startDaemon()
        let client = try lab.subscribe(host: "far.test")
        XCTAssertEqual(client.initial.verdict.status, .wired)
        try lab.ip("route add 198.18.0.0/15 via 203.0.113.1 dev wwan0")
        try client.waitFor("far.test via wwan0") { $0.status == .wwan }
        try lab.ip("route del 198.18.0.0/15")
        try client.waitFor("far.test back via eth0") { $0.status == .wired }
        XCTAssertEqual(client.events.map(\.verdict.status), [.wwan, .wired])
        XCTAssertTrue(client.events.allSatisfy { $0.verdict.target == "far.test" }, "only the host's events")
    }

    func testUnmeteredDestinationFromConfiguration() throws {
        try lab.ip("route add 198.18.0.0/15 via 203.0.113.1 dev wwan0")
        try lab.startDaemon(config: "[[unmetered]]\nprefix = \"198.18.0.0/15\"\n")
        let host = try status("far.test")
        XCTAssertEqual(host.status, .wwan)
        XCTAssertFalse(host.metered, "a LAN mirror behind the modem is not metered")
        XCTAssertTrue(try status("onlink.test").metered)
    }

    func testLibraryHostMonitorThroughTheDaemon() throws {
        try lab.startDaemon()
        let monitor = ReachabilityMonitor(host: "far.test", source: .daemon(socketPath: lab.socketPath), notificationCenter: NotificationCenter())
        try monitor.startNotifier()
        defer { monitor.stopNotifier() }
        XCTAssertEqual(monitor.verdict?.verdict.target, "far.test")
        XCTAssertEqual(monitor.verdict?.verdict.status, .wired)
        let metered = expectation(description: "far.test via wwan0")
        monitor.whenReachable = { if $0.verdict.status == .wwan { metered.fulfill() } }
        try lab.ip("route add 198.18.0.0/15 via 203.0.113.1 dev wwan0")
        wait(for: [metered], timeout: 30)
        XCTAssertEqual(monitor.connection, .cellular)
    }

    func testLibraryHostMonitorInProcess() throws {
        // In-process resolution reads this process's /etc/hosts, so the target is an address.
        let monitor = ReachabilityMonitor(host: "198.18.0.5", source: .netlink(sysfsRoot: lab.sysfsRoot), notificationCenter: NotificationCenter())
        try lab.inNamespace { try monitor.startNotifier() }
        defer { monitor.stopNotifier() }
        XCTAssertEqual(monitor.verdict?.verdict.status, .wired)
        XCTAssertEqual(monitor.verdict?.verdict.addresses, [IPAddress("198.18.0.5")!])
        let metered = expectation(description: "198.18.0.5 via wwan0")
        monitor.whenReachable = { if $0.verdict.status == .wwan { metered.fulfill() } }
        try lab.ip("route add 198.18.0.0/15 via 203.0.113.1 dev wwan0")
        wait(for: [metered], timeout: 30)
    }

    func testWatchedNamesAreResolvedAgain() throws {
        try lab.startDaemon(config: "[hosts]\nrefresh_seconds = 1\n")
        let client = try lab.subscribe(host: "far.test")
        XCTAssertEqual(client.initial.verdict.addresses, [IPAddress("198.18.0.5")!])
        // Rewrite the namespace's hosts file in place: `ip netns exec` bind-mounted this very file.
        let path = "/etc/netns/\(lab.host)/hosts"
        let text = try String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(of: "198.18.0.5 far.test", with: "203.0.113.60 far.test")
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
        let moved = try client.waitFor("far.test at its new address", timeout: 30) { $0.addresses == [IPAddress("203.0.113.60")!] }
        XCTAssertEqual(moved.verdict.status, .wwan)
    }
}
