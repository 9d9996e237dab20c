import Foundation
import ReachdModel
import XCTest

/// reachd against the real kernel: links, addresses and routes in a network namespace; verdicts and
/// events read over the socket as a client sees them.
final class InternetVerdictIntegrationTests: XCTestCase {
    private var lab: NetLab!

    override func setUpWithError() throws {
        lab = try NetLab.make()
    }

    override func tearDown() {
        lab?.tearDown()
    }

    /// eth0 (metric 100) with wwan0 (metric 200) as the backup, as on a laptop with a modem.
    private func wiredWithWWANBackup(ignoreRoutesWithLinkdown: Bool) throws {
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.addUplink("wwan0", "203.0.113", metric: 200)
        if ignoreRoutesWithLinkdown {
            try lab.inHost("sysctl -qw net.ipv4.conf.all.ignore_routes_with_linkdown=1")
        }
    }

    func testUnreachableWithoutDefaultRoute() throws {
        try lab.addLink("eth0", ipv4: "192.0.2.2/24")
        try lab.startDaemon()
        let verdict = try lab.subscribe().initial.verdict
        XCTAssertFalse(verdict.reachable)
        XCTAssertEqual(verdict.status, .unreachable)
        XCTAssertEqual(verdict.reason, "no IPv4 default route")
        XCTAssertNil(verdict.interface)
    }

    /// Toggling IPv6 on a link (as NetworkManager does when it takes a device over) gives libnl's link cache
    /// a second, AF_INET6 object for the same ifindex without a carrier attribute; it is not the link.
    func testIPv6LinkObjectsAreNotTakenForTheLink() throws {
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.startDaemon()
        let subscriber = try lab.subscribe()
        try subscriber.waitFor("wired") { $0.status == .wired }
        try lab.inHost("sysctl -q -w net.ipv6.conf.eth0.disable_ipv6=1")
        try lab.inHost("sysctl -q -w net.ipv6.conf.eth0.disable_ipv6=0")
        // A change the daemon must report, after the toggle: the verdict it gives then shows what it took eth0 for.
        try lab.ip("route del default")
        try subscriber.waitFor("unreachable") { !$0.reachable }
        try lab.ip("route add default via 192.0.2.1 dev eth0 metric 100")
        let verdict = try subscriber.waitFor("wired again", timeout: 30) { $0.status == .wired }.verdict
        XCTAssertEqual(verdict.interface, "eth0")
        XCTAssertTrue(verdict.flags.contains(.reachable), "\(verdict.summary)")
    }

    func testKindsByNameAndMetricPreference() throws {
        try lab.addLink("wlan0", ipv4: "198.51.100.2/24")
        try lab.addLink("wwan0", ipv4: "203.0.113.2/24")
        try lab.addLink("eth0", ipv4: "192.0.2.2/24")
        try lab.ip("route add default via 198.51.100.1 dev wlan0 metric 300")
        try lab.startDaemon()
        let client = try lab.subscribe()
        XCTAssertEqual(client.initial.verdict.status, .wifi)
        XCTAssertEqual(client.initial.verdict.interface, "wlan0")
        XCTAssertFalse(client.initial.verdict.metered)

        try lab.ip("route add default via 203.0.113.1 dev wwan0 metric 200")
        let wwan = try client.waitFor("wwan0 preferred by metric") { $0.status == .wwan }
        XCTAssertTrue(wwan.verdict.metered)
        XCTAssertEqual(wwan.verdict.meteredReason, "interface kind wwan")
        XCTAssertEqual(wwan.verdict.flags, [.reachable, .isWWAN])
        XCTAssertEqual(wwan.sequence, client.initial.sequence + 1)

        try lab.ip("route add default via 192.0.2.1 dev eth0 metric 100")
        let wired = try client.waitFor("eth0 preferred by metric") { $0.status == .wired }
        XCTAssertEqual(wired.verdict.interface, "eth0")
        XCTAssertEqual(wired.verdict.ipv4.gateway, IPAddress("192.0.2.1"))
        XCTAssertEqual(wired.verdict.ipv4.metric, 100)
        XCTAssertEqual(wired.sequence, wwan.sequence + 1)
        XCTAssertEqual(client.events.count, 2, "one event per change")
    }

    func testFailoverToWWANWhenWiredLosesCarrierAndBack() throws {
        try wiredWithWWANBackup(ignoreRoutesWithLinkdown: true)
        try lab.startDaemon()
        let client = try lab.subscribe()
        XCTAssertEqual(client.initial.verdict.status, .wired)

        try lab.setCarrier("eth0", false)
        let failover = try client.waitFor("failover to wwan0") { $0.status == .wwan }
        XCTAssertEqual(failover.verdict.interface, "wwan0")
        XCTAssertTrue(failover.verdict.metered)

        try lab.setCarrier("eth0", true)
        let back = try client.waitFor("back on eth0") { $0.status == .wired }
        XCTAssertEqual(back.verdict.interface, "eth0")
        XCTAssertEqual(client.events.map(\.verdict.status), [.wwan, .wired], "exactly one event per settled state")
        XCTAssertEqual(client.events.map(\.sequence), [client.initial.sequence + 1, client.initial.sequence + 2])
        XCTAssertEqual(try client.drain(for: 0.3), [], "nothing more once settled")
    }

    func testRoutesDumpedWhileWithoutCarrierDoNotStayDead() throws {
        // With ignore_routes_with_linkdown the kernel marks eth0's route "dead linkdown" and clears that
        // again on carrier without a netlink message. A route dump taken in between (here triggered by a
        // new link) must not leave the verdict stuck on wwan0.
        try wiredWithWWANBackup(ignoreRoutesWithLinkdown: true)
        try lab.startDaemon()
        let client = try lab.subscribe()
        try lab.setCarrier("eth0", false)
        try client.waitFor("failover to wwan0") { $0.status == .wwan }
        try lab.addLink("veth9")
        XCTAssertTrue(try lab.run("ip -n \(lab.host) route show default").contains("dead"), "the kernel reports the route dead")
        try lab.setCarrier("eth0", true)
        try client.waitFor("back on eth0 after the dump") { $0.status == .wired }
    }

    func testCarrierLossIsUnreachableWhileTheKernelStillUsesTheRoute() throws {
        try wiredWithWWANBackup(ignoreRoutesWithLinkdown: false)
        try lab.startDaemon()
        let client = try lab.subscribe()
        XCTAssertEqual(client.initial.verdict.status, .wired)

        try lab.setCarrier("eth0", false)
        let lost = try client.waitFor("eth0 without carrier") { !$0.reachable }
        XCTAssertEqual(lost.verdict.reason, "eth0 has no carrier")
        XCTAssertEqual(lost.verdict.interface, "eth0")
        XCTAssertEqual(lost.verdict.flags, [.connectionRequired])

        // Turning on ignore_routes_with_linkdown is a netconf event: the next route counts at once.
        try lab.inHost("sysctl -qw net.ipv4.conf.eth0.ignore_routes_with_linkdown=1")
        let skipped = try client.waitFor("kernel skips the linkdown route") { $0.status == .wwan }
        XCTAssertEqual(skipped.verdict.interface, "wwan0")
    }

    func testAdministrativelyDownLinkLosesItsRoutesForGood() throws {
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.addUplink("wlan0", "198.51.100", metric: 200)
        try lab.startDaemon()
        let client = try lab.subscribe()
        XCTAssertEqual(client.initial.verdict.status, .wired)

        try lab.ip("link set eth0 down")
        try client.waitFor("wlan0 after eth0 went down") { $0.status == .wifi }
        // The kernel flushed the IPv4 routes through eth0 without telling anyone; bringing the link back
        // does not restore them, so the verdict must stay on wlan0.
        try lab.ip("link set eth0 up")
        XCTAssertEqual(try client.drain(for: 0.5).map(\.verdict.status), [])
        XCTAssertEqual(try lab.subscribe().initial.verdict.status, .wifi)
        try lab.ip("route add default via 192.0.2.1 dev eth0 metric 100")
        try client.waitFor("eth0 once its route is back") { $0.status == .wired }
    }

    func testLinkThatWentDownIsJudgedWithoutItsFlushedRoutesInOneEvent() throws {
        try lab.addLink("eth0", ipv4: "192.0.2.2/24", ipv6: "2001:db8:1::2/64")
        try lab.ip("route add default via 192.0.2.1 dev eth0 metric 100")
        try lab.ip("-6 route add default via 2001:db8:1::1 dev eth0 metric 1024")
        try lab.startDaemon()
        let client = try lab.subscribe()
        try client.waitFor("eth0 reachable over IPv6") { $0.reachable && $0.family == .ipv6 }

        // reachd publishes before it reads eth0's routes again: the verdict must already be the one without
        // the routes the kernel removed, not "eth0 is down" followed by a second event.
        let before = client.events.count
        try lab.ip("link set eth0 down")
        let down = try client.waitFor("eth0 down") { !$0.reachable }
        XCTAssertEqual(client.events.count, before + 1, "one event for the change")
        XCTAssertEqual(down.verdict.ipv4.reason, "no IPv4 default route")
        XCTAssertEqual(down.verdict.ipv6.reason, "no IPv6 default route")
        // The next change's event is the next one: nothing came between (the routes read again matched).
        try lab.addUplink("wlan0", "198.51.100", metric: 200)
        let next = try client.waitFor("wlan0") { $0.status == .wifi }
        XCTAssertEqual(next.sequence, down.sequence + 1)
        XCTAssertEqual(client.events.count, before + 2)
    }

    func testIPv6OnlyDefaultRoute() throws {
        try lab.addLink("eth0", ipv6: "2001:db8:1::2/64")
        try lab.ip("-6 route add default via 2001:db8:1::1 dev eth0 metric 1024")
        try lab.startDaemon()
        let verdict = try lab.subscribe().waitFor("IPv6 reachable") { $0.reachable }.verdict
        XCTAssertEqual(verdict.status, .wired)
        XCTAssertEqual(verdict.family, .ipv6)
        XCTAssertEqual(verdict.ipv6.gateway, IPAddress("2001:db8:1::1"))
        XCTAssertFalse(verdict.ipv4.reachable)
        XCTAssertEqual(verdict.ipv4.reason, "no IPv4 default route")
    }

    func testDeletedLink() throws {
        try lab.addUplink("wwan0", "203.0.113", metric: 50)
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.startDaemon()
        let client = try lab.subscribe()
        XCTAssertEqual(client.initial.verdict.status, .wwan)
        try lab.ip("link del wwan0")
        try client.waitFor("eth0 after wwan0 was deleted") { $0.status == .wired }
        try lab.ip("link del eth0")
        let gone = try client.waitFor("nothing left") { !$0.reachable }
        XCTAssertEqual(gone.verdict.reason, "no IPv4 default route")
    }

    func testConfigurationOverridesKindMeteredAndIgnore() throws {
        try lab.addUplink("wlan0", "198.51.100", metric: 10)
        try lab.addUplink("eth0", "192.0.2", metric: 20)
        try lab.addUplink("usb0", "203.0.113", metric: 30)
        try lab.startDaemon(config: """
            [[interface]]
            match = "wlan*"
            ignore = true

            [[interface]]
            match = "eth0"
            metered = true

            [[interface]]
            match = "usb*"
            kind = "wwan"
            """)
        let client = try lab.subscribe()
        let verdict = client.initial.verdict
        XCTAssertEqual(verdict.status, .wired, "wlan0 is ignored")
        XCTAssertTrue(verdict.metered)
        XCTAssertEqual(verdict.meteredReason, "config: eth0")
        try lab.ip("route del default via 192.0.2.1 dev eth0")
        let usb = try client.waitFor("usb0 as wwan") { $0.interface == "usb0" }
        XCTAssertEqual(usb.verdict.status, .wwan)
        XCTAssertEqual(usb.verdict.flags, [.reachable, .isWWAN])
    }

    func testFakeSysfsClassifiesAnUnconventionalName() throws {
        try lab.fakeSysfs("radio0", uevent: "DEVTYPE=wlan\nINTERFACE=radio0\n")
        try lab.addLink("radio0", ipv4: "198.51.100.2/24")
        try lab.ip("route add default via 198.51.100.1 dev radio0")
        try lab.startDaemon()
        let verdict = try lab.subscribe().initial.verdict
        XCTAssertEqual(verdict.status, .wifi)
        XCTAssertEqual(verdict.ipv4.kindSource, "sysfs DEVTYPE=wlan")
    }

    func testBadConfigurationFailsWithAClearMessage() throws {
        XCTAssertThrowsError(try lab.startDaemon(config: "[[interface]]\nmatch = \"x\"\nkind = \"laser\"\n"))
        XCTAssertTrue(lab.log.contains("\"kind\" must be one of"), lab.log)
    }
}
