import ReachdModel
import XCTest

final class HostVerdictTests: XCTestCase {
    private let snapshot = NetworkSnapshot(links: [
        Fixture.link(1, "lo", [.up, .running, .lowerUp, .loopback], hardware: LinkInfo.arpLoopback),
        Fixture.link(2, "eth0"),
        Fixture.link(4, "wwan0"),
        Fixture.link(5, "wlan0", Fixture.noCarrier),
    ])
    private let mirror = IPAddress("198.18.0.5")!
    private let v6 = IPAddress("2001:db8:1::50")!

    private func route(_ index: Int32, gateway: String? = nil, type: RouteType = .unicast) -> RouteDecision {
        .route(type: type, interfaceIndex: index, gateway: gateway.flatMap(IPAddress.init), source: IPAddress("192.0.2.2"))
    }

    func testJudgesTheLinkTheKernelChose() {
        let judge = HostVerdict()
        let table: [(RouteDecision, ReachabilityStatus, ReachabilityFlags, Bool, String?)] = [
            (route(2, gateway: "192.0.2.1"), .wired, [.reachable], false, nil),
            (route(4, gateway: "203.0.113.1"), .wwan, [.reachable, .isWWAN], true, nil),
            (route(4), .wwan, [.reachable, .isWWAN, .isDirect], true, nil),
            (route(1, type: .local), .other, [.reachable, .isLocalAddress, .isDirect], false, nil),
            (route(5), .unreachable, [.connectionRequired], false, "wlan0 has no carrier"),
            (.route(type: .unicast, interfaceIndex: 2, gateway: nil, source: nil), .unreachable, [.connectionRequired], false, "eth0 has no source address for 198.18.0.5"),
            (.refused(errno: ENETUNREACH), .unreachable, [], false, "no route to 198.18.0.5"),
            (.refused(errno: EHOSTUNREACH), .unreachable, [], false, "route to 198.18.0.5 is unreachable"),
            (.refused(errno: EACCES), .unreachable, [], false, "route to 198.18.0.5 is prohibited"),
            (.refused(errno: EINVAL), .unreachable, [], false, "route to 198.18.0.5 is a blackhole"),
            (route(9), .unreachable, [], false, "route to 198.18.0.5 leaves on an unknown interface (index 9)"),
        ]
        for (decision, status, flags, metered, reason) in table {
            let verdict = judge.judge(host: "mirror.test", address: mirror, decision: decision, in: snapshot)
            XCTAssertEqual(verdict.status, status, "\(decision)")
            XCTAssertEqual(verdict.flags, flags, "\(decision): \(verdict.flags.names)")
            XCTAssertEqual(verdict.metered, metered, "\(decision)")
            XCTAssertEqual(verdict.reason, reason, "\(decision)")
        }
    }

    /// Every way a host is not reachable has its machine-readable code; a reachable one has none.
    func testReasonCodes() {
        let judge = HostVerdict(classifier: InterfaceClassifier(rules: [InterfaceRule(match: "wwan*", ignore: true)]))
        let table: [(RouteDecision, ReasonCode?)] = [
            (route(2, gateway: "192.0.2.1"), nil),
            (route(1, type: .local), nil),
            (route(5), .interfaceNotOperational),
            (.route(type: .unicast, interfaceIndex: 2, gateway: nil, source: nil), .noSourceAddress),
            (.refused(errno: ENETUNREACH), .noRoute),
            (.refused(errno: EHOSTUNREACH), .rejectingRoute),
            (.refused(errno: EACCES), .rejectingRoute),
            (.refused(errno: EINVAL), .rejectingRoute),
            (.refused(errno: EPERM), .lookupFailed),
            (route(2, type: .blackhole), .rejectingRoute),
            (route(9), .unknownInterface),
            (route(4), .ignoredInterface),
        ]
        for (decision, code) in table {
            let verdict = judge.judge(host: "mirror.test", address: mirror, decision: decision, in: snapshot)
            XCTAssertEqual(verdict.reasonCode, code, "\(decision): \(verdict.reason ?? "reachable")")
        }
        let unresolved = judge.verdict(host: "nothing.test", resolution: .failed("Name or service not known"), decisions: [:], in: snapshot)
        XCTAssertEqual(unresolved.reasonCode, .notResolved)
        let refused = judge.verdict(host: "v4.test", resolution: .addresses([mirror]), decisions: [mirror: .refused(errno: ENETUNREACH)], in: snapshot)
        XCTAssertEqual(refused.reasonCode, .noRoute)
        XCTAssertEqual(refused.ipv6.reasonCode, .noAddress)
    }

    func testOverallFromTheFirstAddressAndPerFamily() {
        let verdict = HostVerdict().verdict(
            host: "dual.test", resolution: .addresses([v6, mirror]),
            decisions: [v6: route(2), mirror: route(4, gateway: "203.0.113.1")], in: snapshot)
        XCTAssertEqual(verdict.target, "dual.test")
        XCTAssertEqual(verdict.family, .ipv6)
        XCTAssertEqual(verdict.status, .wired)
        XCTAssertFalse(verdict.metered)
        XCTAssertEqual(verdict.ipv4.status, .wwan)
        XCTAssertEqual(verdict.ipv6.status, .wired)
        XCTAssertEqual(verdict.addresses, [v6, mirror])

        let v4only = HostVerdict().verdict(host: "v4.test", resolution: .addresses([mirror]), decisions: [mirror: route(2)], in: snapshot)
        XCTAssertEqual(v4only.ipv6.reason, "no IPv6 address")
    }

    func testUnresolvedNameIsNotReachable() {
        let verdict = HostVerdict().verdict(host: "nothing.test", resolution: .failed("Name or service not known"), decisions: [:], in: snapshot)
        XCTAssertFalse(verdict.reachable)
        XCTAssertEqual(verdict.flags, [])
        XCTAssertEqual(verdict.reason, "name not resolved")
    }

    func testUnmeteredDestinations() {
        let rules = [
            UnmeteredDestination(host: "*.LAN"),
            UnmeteredDestination(prefix: IPAddress("198.18.0.0"), prefixLength: 15),
            UnmeteredDestination(prefix: IPAddress("2001:db8:1::"), prefixLength: 48),
        ]
        let judge = HostVerdict(unmetered: rules)
        let viaWWAN = route(4, gateway: "203.0.113.1")
        XCTAssertFalse(judge.judge(host: "mirror.lan", address: IPAddress("203.0.113.9")!, decision: viaWWAN, in: snapshot).metered)
        XCTAssertFalse(judge.judge(host: "x", address: IPAddress("198.19.255.1")!, decision: viaWWAN, in: snapshot).metered)
        XCTAssertTrue(judge.judge(host: "x", address: IPAddress("198.20.0.1")!, decision: viaWWAN, in: snapshot).metered)
        XCTAssertFalse(judge.judge(host: "x", address: v6, decision: viaWWAN, in: snapshot).metered)
        XCTAssertTrue(judge.judge(host: "x", address: IPAddress("2001:db8:2::1")!, decision: viaWWAN, in: snapshot).metered)
    }
}
