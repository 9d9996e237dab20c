import ReachdModel
import ReachdMonitor
import Synchronization
import XCTest

/// What the hub publishes for a change of the captive portal's counters.
final class VerdictHubTests: XCTestCase {
    private static let api = "https://portal.test/api"

    /// wlan0 up with a default route, announcing `api`, which answered `status`.
    private func snapshot(_ status: CaptivePortalStatus?, route: Bool = true) -> NetworkSnapshot {
        var snapshot = NetworkSnapshot(
            links: [LinkInfo(index: 2, name: "wlan0", flags: [.up, .running, .lowerUp], carrier: true, hardwareType: LinkInfo.arpEther)],
            addresses: [InterfaceAddress(interfaceIndex: 2, address: IPAddress("192.0.2.2")!, prefixLength: 24)],
            defaultRoutes: route ? [Route(family: .ipv4, type: .unicast, metric: 0,
                                          nexthops: [Nexthop(interfaceIndex: 2, gateway: IPAddress("192.0.2.1"))])] : [])
        snapshot.networkd = [2: NetworkdLinkFacts(captivePortal: Self.api)]
        if let status { snapshot.portalStatus = [Self.api: status] }
        return snapshot
    }

    func testACounterOnlyChangeIsNoNetworkChangeButReachesRefreshObservers() throws {
        let hub = VerdictHub(engine: InternetVerdict())
        let changes = Mutex<[StampedVerdict]>([]), refreshes = Mutex<[StampedVerdict]>([])
        _ = hub.addObserver { stamped in changes.withLock { $0.append(stamped) } }
        _ = hub.addObserver(refreshes: true) { stamped in refreshes.withLock { $0.append(stamped) } }
        let first = try XCTUnwrap(hub.update(snapshot: snapshot(CaptivePortalStatus(captive: false, secondsRemaining: 40))))

        XCTAssertNil(hub.update(snapshot: snapshot(CaptivePortalStatus(captive: false, secondsRemaining: 35))),
                     "NetworkView tells HostMonitor internetChanged only for a returned change")
        XCTAssertEqual(changes.withLock { $0.map(\.sequence) }, [1])
        XCTAssertEqual(refreshes.withLock { $0.map(\.sequence) }, [1, 1])
        XCTAssertEqual(refreshes.withLock { $0.last?.verdict.captivePortal?.status?.secondsRemaining }, 35)
        XCTAssertEqual(hub.current?.sequence, first.sequence)
        XCTAssertEqual(hub.current?.verdict.captivePortal?.status?.secondsRemaining, 35, "status and D-Bus read the new counters")

        XCTAssertEqual(hub.update(snapshot: snapshot(CaptivePortalStatus(captive: true)))?.sequence, 2, "captive again: a change")
        XCTAssertEqual(changes.withLock { $0.map(\.sequence) }, [1, 2])
    }
}
