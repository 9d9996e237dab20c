import ReachdModel
@testable import ReachdNetwork
import XCTest

/// reachd's address type (ReachdNetwork has Apple's `IPAddress` protocol).
private typealias Address = ReachdModel.IPAddress

/// The mapping from a snapshot to an NWPath: eth0 (wired, metric 100) and wwan0 (cellular, metric 200).
final class PathJudgeTests: XCTestCase {
    private static let up: LinkFlags = [.up, .running, .lowerUp]

    private func snapshot(eth0: LinkFlags = up, wwan0: LinkFlags = up, extra: [LinkInfo] = [], routes extraRoutes: [Route] = [],
                          addresses extraAddresses: [InterfaceAddress] = []) -> NetworkSnapshot {
        let links = [
            LinkInfo(index: 1, name: "lo", flags: [.up, .running, .lowerUp, .loopback], hardwareType: LinkInfo.arpLoopback),
            LinkInfo(index: 2, name: "eth0", flags: eth0, carrier: eth0.contains(.lowerUp)),
            LinkInfo(index: 3, name: "wwan0", flags: wwan0, carrier: wwan0.contains(.lowerUp)),
        ] + extra
        let addresses = [
            InterfaceAddress(interfaceIndex: 1, address: Address("127.0.0.1")!, prefixLength: 8, scope: 254),
            InterfaceAddress(interfaceIndex: 2, address: Address("192.0.2.2")!, prefixLength: 24),
            InterfaceAddress(interfaceIndex: 3, address: Address("198.51.100.2")!, prefixLength: 24),
        ] + extraAddresses
        // The kernel flushes the routes of a link that goes down.
        var routes = extraRoutes
        if eth0.contains(.up) { routes.append(route(via: "192.0.2.1", dev: 2, metric: 100)) }
        if wwan0.contains(.up) { routes.append(route(via: "198.51.100.1", dev: 3, metric: 200)) }
        return NetworkSnapshot(links: links, addresses: addresses, defaultRoutes: routes)
    }

    private func route(_ family: Address.Family = .ipv4, via gateway: String, dev index: Int32, metric: UInt32) -> Route {
        Route(family: family, metric: metric, nexthops: [Nexthop(interfaceIndex: index, gateway: Address(gateway))])
    }

    private func names(_ path: NWPath) -> [String] { path.availableInterfaces.map(\.name) }

    private func gateways(_ path: NWPath) -> [String] { path.gateways.map(\.debugDescription) }

    func testBothUpTakesTheLowerMetricAndListsBothInMetricOrder() {
        let path = PathJudge().path(for: snapshot(), nameServer: true)
        XCTAssertEqual(path.status, .satisfied)
        XCTAssertEqual(path.unsatisfiedReason, .notAvailable)
        XCTAssertTrue(path.usesInterfaceType(.wiredEthernet))
        XCTAssertFalse(path.usesInterfaceType(.cellular))
        XCTAssertFalse(path.isExpensive)
        XCTAssertFalse(path.isConstrained)
        XCTAssertEqual(names(path), ["eth0", "wwan0"])
        XCTAssertEqual(path.availableInterfaces.map(\.type), [.wiredEthernet, .cellular])
        XCTAssertEqual(path.availableInterfaces.map(\.index), [2, 3])
        XCTAssertEqual(gateways(path), ["192.0.2.1:0"])
        XCTAssertTrue(path.supportsIPv4)
        XCTAssertFalse(path.supportsIPv6)
        XCTAssertTrue(path.supportsDNS)
    }

    func testWiredGoneFallsBackToCellularWhichIsExpensive() {
        let path = PathJudge().path(for: snapshot(eth0: []), nameServer: true)
        XCTAssertEqual(path.status, .satisfied)
        XCTAssertTrue(path.usesInterfaceType(.cellular))
        XCTAssertTrue(path.isExpensive)
        XCTAssertEqual(names(path), ["wwan0"])
        XCTAssertEqual(gateways(path), ["198.51.100.1:0"])
    }

    func testRequiredCellularJudgesTheCellularRouteEvenWhenWiredIsBetter() {
        let path = PathJudge(required: .cellular).path(for: snapshot(), nameServer: false)
        XCTAssertEqual(path.status, .satisfied)
        XCTAssertTrue(path.usesInterfaceType(.cellular))
        XCTAssertTrue(path.isExpensive)
        XCTAssertEqual(names(path), ["wwan0"])
        XCTAssertEqual(gateways(path), ["198.51.100.1:0"])
        XCTAssertFalse(path.supportsDNS)
        XCTAssertEqual(PathJudge(required: .cellular).path(for: snapshot(wwan0: []), nameServer: true).status, .unsatisfied)
    }

    func testProhibitedCellularIsUnsatisfiedWithOnlyCellular() {
        let judge = PathJudge(prohibited: [.cellular])
        let path = judge.path(for: snapshot(eth0: []), nameServer: true)
        XCTAssertEqual(path.status, .unsatisfied)
        XCTAssertEqual(path.unsatisfiedReason, .notAvailable)
        XCTAssertFalse(path.isExpensive)
        XCTAssertFalse(path.usesInterfaceType(.cellular))
        XCTAssertEqual(names(path), [])
        XCTAssertEqual(gateways(path), [])
        XCTAssertFalse(path.supportsIPv4)
        XCTAssertFalse(path.supportsDNS)
        XCTAssertEqual(names(judge.path(for: snapshot(), nameServer: true)), ["eth0"])
    }

    func testNoCarrierAndNoAddressAreNotAvailable() {
        let path = PathJudge().path(for: snapshot(eth0: [.up]), nameServer: true)
        XCTAssertEqual(names(path), ["wwan0"])
        let addressless = LinkInfo(index: 4, name: "eth1", flags: Self.up, carrier: true)
        XCTAssertEqual(names(PathJudge().path(for: snapshot(extra: [addressless]), nameServer: true)), ["eth0", "wwan0"])
    }

    func testLinksWithoutADefaultRouteComeLastByIndex() {
        let wifi = LinkInfo(index: 5, name: "wlan0", flags: Self.up, carrier: true, sysfs: SysfsFacts(devtype: "wlan"))
        let tunnel = LinkInfo(index: 4, name: "wg0", flags: Self.up, carrier: true, linkKind: "wireguard", hardwareType: LinkInfo.arpNone)
        let path = PathJudge().path(
            for: snapshot(extra: [wifi, tunnel], routes: [route(via: "203.0.113.1", dev: 5, metric: 50)],
                          addresses: [InterfaceAddress(interfaceIndex: 5, address: Address("203.0.113.2")!, prefixLength: 24),
                                      InterfaceAddress(interfaceIndex: 4, address: Address("10.9.0.2")!, prefixLength: 24)]),
            nameServer: true
        )
        XCTAssertEqual(names(path), ["wlan0", "eth0", "wwan0", "wg0"])
        XCTAssertEqual(path.availableInterfaces.map(\.type), [.wifi, .wiredEthernet, .cellular, .other])
        XCTAssertTrue(path.usesInterfaceType(.wifi))
    }

    func testConfiguredRulesDecideKindAndMetered() {
        let classifier = InterfaceClassifier(rules: [InterfaceRule(match: "eth0", kind: .wifi, metered: true)])
        let path = PathJudge(classifier: classifier).path(for: snapshot(), nameServer: true)
        XCTAssertTrue(path.usesInterfaceType(.wifi))
        XCTAssertTrue(path.isExpensive)
        let ignoring = InterfaceClassifier(rules: [InterfaceRule(match: "eth0", ignore: true)])
        XCTAssertEqual(names(PathJudge(classifier: ignoring).path(for: snapshot(), nameServer: true)), ["wwan0"])
    }

    func testAConstrainedRuleCountsOnlyForThePathsInterface() {
        let classifier = InterfaceClassifier(rules: [InterfaceRule(match: "wwan*", constrained: true)])
        XCTAssertFalse(PathJudge(classifier: classifier).path(for: snapshot(), nameServer: true).isConstrained)
        XCTAssertTrue(PathJudge(classifier: classifier).path(for: snapshot(eth0: []), nameServer: true).isConstrained)
        XCTAssertTrue(PathJudge(classifier: classifier, required: .cellular).path(for: snapshot(), nameServer: true).isConstrained)
        XCTAssertFalse(PathJudge(classifier: classifier).path(for: snapshot(eth0: [], wwan0: []), nameServer: true).isConstrained)
    }

    func testDaemonMeteredWordCountsOnlyForThePathsInterface() {
        let judge = PathJudge()
        XCTAssertTrue(judge.path(for: snapshot(), nameServer: true, daemon: DaemonMetered(interface: "eth0", metered: true)).isExpensive)
        XCTAssertFalse(judge.path(for: snapshot(), nameServer: true, daemon: DaemonMetered(interface: "wwan0", metered: true)).isExpensive)
        XCTAssertFalse(judge.path(for: snapshot(eth0: []), nameServer: true, daemon: DaemonMetered(interface: "wwan0", metered: false)).isExpensive)
        XCTAssertFalse(judge.path(for: snapshot(eth0: [], wwan0: []), nameServer: true, daemon: DaemonMetered(interface: "eth0", metered: true)).isExpensive)
    }

    func testDualStackUsesBothFamiliesAndScopesALinkLocalGateway() {
        let path = PathJudge().path(
            for: snapshot(routes: [route(.ipv6, via: "fe80::1", dev: 2, metric: 100)],
                          addresses: [InterfaceAddress(interfaceIndex: 2, address: Address("2001:db8::2")!, prefixLength: 64)]),
            nameServer: true
        )
        XCTAssertTrue(path.supportsIPv4)
        XCTAssertTrue(path.supportsIPv6)
        XCTAssertEqual(gateways(path), ["192.0.2.1:0", "[fe80::1%eth0]:0"])
        XCTAssertEqual(path.gateways.first, .hostPort(host: .ipv4(IPv4Address("192.0.2.1")!), port: 0))
    }

    func testABlackholeDefaultRouteStaysForEveryMonitor() {
        let blackhole = Route(family: .ipv4, type: .blackhole, metric: 10)
        XCTAssertEqual(PathJudge(required: .cellular).path(for: snapshot(routes: [blackhole]), nameServer: true).status, .unsatisfied)
    }

    func testEqualSnapshotsGiveEqualPaths() {
        XCTAssertEqual(PathJudge().path(for: snapshot(), nameServer: true), PathJudge().path(for: snapshot(), nameServer: true))
        XCTAssertNotEqual(PathJudge().path(for: snapshot(), nameServer: true), PathJudge().path(for: snapshot(eth0: []), nameServer: true))
    }
}
