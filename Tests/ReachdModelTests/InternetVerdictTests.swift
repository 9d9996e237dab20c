import ReachdModel
import XCTest

final class InternetVerdictTests: XCTestCase {
    private typealias F = Fixture

    private struct Case {
        let name: String
        let snapshot: NetworkSnapshot
        var rules: [InterfaceRule] = []
        let status: ReachabilityStatus
        let interface: String?
        let flags: ReachabilityFlags
        var metered = false
        var reason: String? = nil
    }

    private let wired = F.link(2, "eth0")
    private let wifi = F.link(3, "wlan0")
    private let wwan = F.link(4, "wwan0")

    private var cases: [Case] {
        [
            Case(name: "no default route",
                 snapshot: NetworkSnapshot(links: [wired], addresses: [F.v4(2, "192.0.2.2")]),
                 status: .unreachable, interface: nil, flags: [], reason: "no IPv4 default route"),
            Case(name: "wired by name",
                 snapshot: NetworkSnapshot(links: [wired], addresses: [F.v4(2, "192.0.2.2")],
                                           defaultRoutes: [F.defaultRoute(via: "192.0.2.1", dev: 2)]),
                 status: .wired, interface: "eth0", flags: [.reachable]),
            Case(name: "wifi by name",
                 snapshot: NetworkSnapshot(links: [wifi], addresses: [F.v4(3, "198.51.100.2")],
                                           defaultRoutes: [F.defaultRoute(via: "198.51.100.1", dev: 3)]),
                 status: .wifi, interface: "wlan0", flags: [.reachable]),
            Case(name: "wwan by name is metered",
                 snapshot: NetworkSnapshot(links: [wwan], addresses: [F.v4(4, "203.0.113.2")],
                                           defaultRoutes: [F.defaultRoute(via: "203.0.113.1", dev: 4)]),
                 status: .wwan, interface: "wwan0", flags: [.reachable, .isWWAN], metered: true),
            Case(name: "lowest metric wins",
                 snapshot: NetworkSnapshot(links: [wired, wwan], addresses: [F.v4(2, "192.0.2.2"), F.v4(4, "203.0.113.2")],
                                           defaultRoutes: [F.defaultRoute(via: "192.0.2.1", dev: 2, metric: 100),
                                                    F.defaultRoute(via: "203.0.113.1", dev: 4, metric: 50)]),
                 status: .wwan, interface: "wwan0", flags: [.reachable, .isWWAN], metered: true),
            Case(name: "kernel still uses a route without carrier: not reachable",
                 snapshot: NetworkSnapshot(links: [F.link(2, "eth0", F.noCarrier), wwan],
                                           addresses: [F.v4(2, "192.0.2.2"), F.v4(4, "203.0.113.2")],
                                           defaultRoutes: [F.defaultRoute(via: "192.0.2.1", dev: 2, metric: 100),
                                                    F.defaultRoute(via: "203.0.113.1", dev: 4, metric: 200)]),
                 status: .unreachable, interface: "eth0", flags: [.connectionRequired], reason: "eth0 has no carrier"),
            Case(name: "ignore_routes_with_linkdown: the next route counts",
                 snapshot: NetworkSnapshot(links: [F.link(2, "eth0", F.noCarrier), wwan],
                                           addresses: [F.v4(2, "192.0.2.2"), F.v4(4, "203.0.113.2")],
                                           defaultRoutes: [F.defaultRoute(via: "192.0.2.1", dev: 2, metric: 100),
                                                    F.defaultRoute(via: "203.0.113.1", dev: 4, metric: 200)],
                                           linkdownPolicy: LinkdownPolicy(ignore: [.ipv4: [LinkdownPolicy.allInterfaces: true]])),
                 status: .wwan, interface: "wwan0", flags: [.reachable, .isWWAN], metered: true),
            Case(name: "ignore_routes_with_linkdown and nothing else",
                 snapshot: NetworkSnapshot(links: [F.link(2, "eth0", F.noCarrier)], addresses: [F.v4(2, "192.0.2.2")],
                                           defaultRoutes: [F.defaultRoute(via: "192.0.2.1", dev: 2)],
                                           linkdownPolicy: LinkdownPolicy(ignore: [.ipv4: [2: true]])),
                 status: .unreachable, interface: nil, flags: [], reason: "no usable IPv4 default route (no carrier on eth0)"),
            Case(name: "a stale route over a device that is down is skipped",
                 snapshot: NetworkSnapshot(links: [F.link(2, "eth0", []), wifi],
                                           addresses: [F.v4(2, "192.0.2.2"), F.v4(3, "198.51.100.2")],
                                           defaultRoutes: [F.defaultRoute(via: "192.0.2.1", dev: 2, metric: 10),
                                                    F.defaultRoute(via: "198.51.100.1", dev: 3, metric: 20)]),
                 status: .wifi, interface: "wlan0", flags: [.reachable]),
            Case(name: "IPv6-only default route",
                 snapshot: NetworkSnapshot(links: [wired], addresses: [F.v6(2, "2001:db8:1::2")],
                                           defaultRoutes: [F.defaultRoute(.ipv6, via: "2001:db8:1::1", dev: 2, metric: 1024)]),
                 status: .wired, interface: "eth0", flags: [.reachable]),
            Case(name: "IPv6 with only a link-local address",
                 snapshot: NetworkSnapshot(links: [wired], addresses: [F.v6(2, "fe80::1", scope: InterfaceAddress.scopeLink)],
                                           defaultRoutes: [F.defaultRoute(.ipv6, via: "fe80::ff", dev: 2, metric: 1024)]),
                 status: .unreachable, interface: "eth0", flags: [.connectionRequired], reason: "eth0 has no usable IPv6 address"),
            Case(name: "tentative IPv6 address is not usable yet",
                 snapshot: NetworkSnapshot(links: [wired], addresses: [F.v6(2, "2001:db8:1::2", flags: .tentative)],
                                           defaultRoutes: [F.defaultRoute(.ipv6, via: "2001:db8:1::1", dev: 2)]),
                 status: .unreachable, interface: "eth0", flags: [.connectionRequired], reason: "eth0 has no usable IPv6 address"),
            Case(name: "an unreachable default route with a lower metric wins",
                 snapshot: NetworkSnapshot(links: [wired], addresses: [F.v4(2, "192.0.2.2")],
                                           defaultRoutes: [F.defaultRoute(via: "192.0.2.1", dev: 2, metric: 100),
                                                    F.defaultRoute(via: nil, dev: 0, metric: 1, type: .unreachable)]),
                 status: .unreachable, interface: nil, flags: [], reason: "IPv4 default route is unreachable"),
            Case(name: "point-to-point device route: direct and transient",
                 snapshot: NetworkSnapshot(links: [F.link(7, "ppp0", kind: nil, hardware: LinkInfo.arpPPP)],
                                           addresses: [F.v4(7, "192.0.2.77")],
                                           defaultRoutes: [F.defaultRoute(via: nil, dev: 7)]),
                 status: .other, interface: "ppp0", flags: [.reachable, .isDirect, .transientConnection]),
            Case(name: "config ignore skips the interface",
                 snapshot: NetworkSnapshot(links: [wired, wifi], addresses: [F.v4(2, "192.0.2.2"), F.v4(3, "198.51.100.2")],
                                           defaultRoutes: [F.defaultRoute(via: "192.0.2.1", dev: 2, metric: 10),
                                                    F.defaultRoute(via: "198.51.100.1", dev: 3, metric: 20)]),
                 rules: [InterfaceRule(match: "eth*", ignore: true)],
                 status: .wifi, interface: "wlan0", flags: [.reachable]),
            Case(name: "config marks a wired link metered",
                 snapshot: NetworkSnapshot(links: [wired], addresses: [F.v4(2, "192.0.2.2")],
                                           defaultRoutes: [F.defaultRoute(via: "192.0.2.1", dev: 2)]),
                 rules: [InterfaceRule(match: "eth0", metered: true)],
                 status: .wired, interface: "eth0", flags: [.reachable], metered: true),
            Case(name: "link not running",
                 snapshot: NetworkSnapshot(links: [F.link(2, "eth0", [.up, .lowerUp])], addresses: [F.v4(2, "192.0.2.2")],
                                           defaultRoutes: [F.defaultRoute(via: "192.0.2.1", dev: 2)]),
                 status: .unreachable, interface: "eth0", flags: [.connectionRequired], reason: "eth0 is not running"),
        ]
    }

    func testTable() {
        for c in cases {
            let verdict = InternetVerdict(classifier: InterfaceClassifier(rules: c.rules)).verdict(for: c.snapshot)
            XCTAssertEqual(verdict.status, c.status, c.name)
            XCTAssertEqual(verdict.reachable, c.status != .unreachable, c.name)
            XCTAssertEqual(verdict.interface, c.interface, c.name)
            XCTAssertEqual(verdict.flags, c.flags, "\(c.name): \(verdict.flags.names)")
            XCTAssertEqual(verdict.metered, c.metered, c.name)
            if let reason = c.reason { XCTAssertEqual(verdict.reason, reason, c.name) }
            XCTAssertEqual(verdict.target, "internet")
        }
    }

    /// The unreachable cases of the table by their machine-readable code; the reachable ones have none.
    func testReasonCodes() {
        let codes: [String: ReasonCode] = [
            "no default route": .noRoute,
            "kernel still uses a route without carrier: not reachable": .interfaceNotOperational,
            "ignore_routes_with_linkdown and nothing else": .noRoute,
            "IPv6 with only a link-local address": .noSourceAddress,
            "tentative IPv6 address is not usable yet": .noSourceAddress,
            "an unreachable default route with a lower metric wins": .rejectingRoute,
            "link not running": .interfaceNotOperational,
        ]
        for c in cases {
            let verdict = InternetVerdict(classifier: InterfaceClassifier(rules: c.rules)).verdict(for: c.snapshot)
            XCTAssertEqual(verdict.reasonCode, codes[c.name], c.name)
        }
    }

    func testIPv6IsPreferredWhenBothFamiliesAreReachable() {
        let snapshot = NetworkSnapshot(
            links: [wired, wwan],
            addresses: [F.v4(2, "192.0.2.2"), F.v6(4, "2001:db8:4::2")],
            defaultRoutes: [F.defaultRoute(via: "192.0.2.1", dev: 2), F.defaultRoute(.ipv6, via: "2001:db8:4::1", dev: 4)]
        )
        let verdict = InternetVerdict().verdict(for: snapshot)
        XCTAssertEqual(verdict.family, .ipv6)
        XCTAssertEqual(verdict.status, .wwan)
        XCTAssertEqual(verdict.ipv4.status, .wired)
        XCTAssertEqual(verdict.ipv4.gateway, IPAddress("192.0.2.1"))
        XCTAssertEqual(verdict.ipv6.interface, "wwan0")
        XCTAssertEqual(verdict.meteredReason, "interface kind wwan")
    }

    func testLinkdownPolicyFollowsTheKernelPerFamily() {
        let all = LinkdownPolicy(ignore: [.ipv4: [LinkdownPolicy.allInterfaces: true], .ipv6: [LinkdownPolicy.allInterfaces: true]])
        XCTAssertTrue(all.ignoresLinkdown(family: .ipv4, interfaceIndex: 5))
        XCTAssertFalse(all.ignoresLinkdown(family: .ipv6, interfaceIndex: 5), "IPv6 reads only the device's value")
        let device = LinkdownPolicy(ignore: [.ipv6: [5: true]])
        XCTAssertTrue(device.ignoresLinkdown(family: .ipv6, interfaceIndex: 5))
        XCTAssertFalse(device.ignoresLinkdown(family: .ipv4, interfaceIndex: 5))
    }
}
