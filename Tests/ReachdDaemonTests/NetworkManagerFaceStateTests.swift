@testable import ReachdDaemon
import ReachdModel
import ReachdServiceKit
import Foundation
import XCTest

/// The values of reachd's NetworkManager face (docs/networkmanager-face.md's table) from real verdicts of
/// InternetVerdict: eth0 and wwan0, each up with an address, the default route through one of them.
final class NetworkManagerFaceStateTests: XCTestCase {
    private let classifier = InterfaceClassifier()

    private func snapshot(defaultVia index: Int32?, wwanCarrier: Bool = true) -> NetworkSnapshot {
        let up: LinkFlags = [.up, .running, .lowerUp]
        return NetworkSnapshot(
            links: [
                LinkInfo(index: 1, name: "lo", flags: [.up, .running, .loopback], hardwareType: LinkInfo.arpLoopback),
                LinkInfo(index: 2, name: "eth0", flags: up, carrier: true),
                LinkInfo(index: 10, name: "wwan0", flags: wwanCarrier ? up : [.up], carrier: wwanCarrier),
            ],
            addresses: [
                InterfaceAddress(interfaceIndex: 2, address: IPAddress("192.0.2.2")!, prefixLength: 24),
                InterfaceAddress(interfaceIndex: 10, address: IPAddress("203.0.113.2")!, prefixLength: 24),
            ],
            defaultRoutes: index.map { [Route(family: .ipv4, type: .unicast, metric: 0, nexthops: [Nexthop(interfaceIndex: $0, gateway: IPAddress($0 == 2 ? "192.0.2.1" : "203.0.113.1"))])] } ?? []
        )
    }

    private func state(_ snapshot: NetworkSnapshot, connectivity: Connectivity = .unknown, judged: Bool = true) -> NetworkManagerFaceState {
        var verdict = InternetVerdict(classifier: classifier).verdict(for: snapshot)
        verdict.connectivity = connectivity
        return NetworkManagerFaceState(verdict: judged ? verdict : nil, snapshot: snapshot, classifier: classifier, checking: false)
    }

    func testWiredIsConnectedGlobalUnmeteredEthernet() throws {
        let face = state(snapshot(defaultVia: 2))
        XCTAssertEqual(face.manager["State"], .uint32(70))
        XCTAssertEqual(face.manager["Connectivity"], .uint32(4), "no check configured: full while reachable, as NetworkManager without a check")
        XCTAssertEqual(face.manager["Metered"], .uint32(4), "guess-no")
        XCTAssertEqual(face.manager["PrimaryConnection"], .objectPath("/org/freedesktop/NetworkManager/ActiveConnection/2"))
        XCTAssertEqual(face.manager["PrimaryConnectionType"], .string("802-3-ethernet"))
        XCTAssertEqual(face.manager["ActiveConnections"], .objectPaths(["/org/freedesktop/NetworkManager/ActiveConnection/2"]))
        XCTAssertEqual(face.manager["Devices"], .objectPaths(["/org/freedesktop/NetworkManager/Devices/2", "/org/freedesktop/NetworkManager/Devices/10"]),
                       "loopback is no device; numeric order")
        let active = try XCTUnwrap(face.active["/org/freedesktop/NetworkManager/ActiveConnection/2"])
        XCTAssertEqual(active["Devices"], .objectPaths(["/org/freedesktop/NetworkManager/Devices/2"]))
        XCTAssertEqual(active["Default"], .bool(true))
        XCTAssertEqual(active["Default6"], .bool(false))
        XCTAssertEqual(active["State"], .uint32(2))
        let eth0 = try XCTUnwrap(face.devices["/org/freedesktop/NetworkManager/Devices/2"])
        XCTAssertEqual(eth0["DeviceType"], .uint32(1))
        XCTAssertEqual(eth0["State"], .uint32(100))
        XCTAssertEqual(eth0["Ip4Connectivity"], .uint32(4))
        XCTAssertEqual(eth0["Ip6Connectivity"], .uint32(1))
        let wwan0 = try XCTUnwrap(face.devices["/org/freedesktop/NetworkManager/Devices/10"])
        XCTAssertEqual(wwan0["DeviceType"], .uint32(8), "modem")
        XCTAssertEqual(wwan0["Metered"], .uint32(3), "guess-yes from the kind")
        XCTAssertEqual(wwan0["ActiveConnection"], .objectPath("/"))
        XCTAssertEqual(eth0["StateReason"], .uint32Pair(100, 0), "libnm reads the state from here")
        XCTAssertTrue(face.has("org.freedesktop.NetworkManager.Device.Wired", at: "/org/freedesktop/NetworkManager/Devices/2"))
        XCTAssertFalse(face.has("org.freedesktop.NetworkManager.Device.Modem", at: "/org/freedesktop/NetworkManager/Devices/2"))
        XCTAssertTrue(face.has("org.freedesktop.NetworkManager.Device.Modem", at: "/org/freedesktop/NetworkManager/Devices/10"))
        XCTAssertTrue(face.has("org.freedesktop.NetworkManager.Connection.Active", at: "/org/freedesktop/NetworkManager/ActiveConnection/2"))
        XCTAssertFalse(face.has("org.freedesktop.NetworkManager.Device", at: "/org/freedesktop/NetworkManager/ActiveConnection/2"))
        XCTAssertEqual(face.value(of: "Speed", interface: "org.freedesktop.NetworkManager.Device.Wired", at: "/org/freedesktop/NetworkManager/Devices/2"), .uint32(0))
        XCTAssertEqual(face.value(of: "Metered", interface: "org.freedesktop.NetworkManager.Device", at: "/org/freedesktop/NetworkManager/Devices/2"), .uint32(4))
    }

    func testWwanIsMeteredGsm() {
        let face = state(snapshot(defaultVia: 10))
        XCTAssertEqual(face.manager["Metered"], .uint32(3))
        XCTAssertEqual(face.manager["PrimaryConnectionType"], .string("gsm"))
        XCTAssertEqual(face.manager["PrimaryConnection"], .objectPath("/org/freedesktop/NetworkManager/ActiveConnection/10"))
        XCTAssertNil(face.active["/org/freedesktop/NetworkManager/ActiveConnection/2"])
    }

    func testPortalLimitedLocalDisconnectedAndUnjudged() {
        XCTAssertEqual(state(snapshot(defaultVia: 2), connectivity: .portal).manager["State"], .uint32(60))
        XCTAssertEqual(state(snapshot(defaultVia: 2), connectivity: .portal).manager["Connectivity"], .uint32(2))
        XCTAssertEqual(state(snapshot(defaultVia: 2), connectivity: .limited).manager["Connectivity"], .uint32(3))
        XCTAssertEqual(state(snapshot(defaultVia: 2), connectivity: .full).manager["State"], .uint32(70))
        let local = state(snapshot(defaultVia: nil))
        XCTAssertEqual(local.manager["State"], .uint32(50), "addresses, no way out")
        XCTAssertEqual(local.manager["Connectivity"], .uint32(1))
        XCTAssertEqual(local.manager["PrimaryConnection"], .objectPath("/"))
        XCTAssertEqual(local.manager["PrimaryConnectionType"], .string(""))
        XCTAssertTrue(local.active.isEmpty)
        let unjudged = state(snapshot(defaultVia: 2), judged: false)
        XCTAssertEqual(unjudged.manager["State"], .uint32(0))
        XCTAssertEqual(unjudged.manager["Connectivity"], .uint32(0))
        XCTAssertEqual(unjudged.manager["Metered"], .uint32(0))
    }

    func testDeviceStates() {
        let face = state(snapshot(defaultVia: 2, wwanCarrier: false))
        XCTAssertEqual(face.devices["/org/freedesktop/NetworkManager/Devices/10"]?["State"], .uint32(20), "no carrier: unavailable")
        let bare = NetworkSnapshot(links: [LinkInfo(index: 3, name: "eth1", flags: [.up, .running, .lowerUp], carrier: true)])
        XCTAssertEqual(NetworkManagerFaceState.deviceState(of: bare.links[3]!, in: bare), 30, "no global address: disconnected")
    }

    /// NetworkManager has no word for roaming or a data budget: a roaming link, or one over its budget, is
    /// metered `yes` on the face (manager and device); a link metered already keeps its own word.
    func testRoamingOrOverBudgetIsMeteredYes() {
        let eth0 = "/org/freedesktop/NetworkManager/Devices/2", wwan0 = "/org/freedesktop/NetworkManager/Devices/10"
        var roaming = snapshot(defaultVia: 2)
        roaming.roaming["eth0"] = .modemManager
        var face = state(roaming)
        XCTAssertEqual(face.manager["Metered"], .uint32(1))
        XCTAssertEqual(face.devices[eth0]?["Metered"], .uint32(1))
        var over = snapshot(defaultVia: 2)
        over.budgets["eth0"] = BudgetStatus(state: .over, usedBytes: 6, limitBytes: 5, period: "day", resetsAt: Timestamp(microseconds: 0))
        face = state(over)
        XCTAssertEqual(face.manager["Metered"], .uint32(1))
        XCTAssertEqual(face.devices[eth0]?["Metered"], .uint32(1))
        over.budgets["eth0"]?.state = .approaching
        XCTAssertEqual(state(over).manager["Metered"], .uint32(4), "approaching its limit is not metered")
        var wwan = snapshot(defaultVia: 10)
        wwan.roaming["wwan0"] = .modemManager
        face = state(wwan)
        XCTAssertEqual(face.manager["Metered"], .uint32(3), "guess-yes from the kind stays")
        XCTAssertEqual(face.devices[wwan0]?["Metered"], .uint32(3))
        XCTAssertEqual(face.devices[eth0]?["Metered"], .uint32(4))
    }

    func testMeteredEnumAndKinds() {
        XCTAssertEqual(MeteredState.allCases.map(NetworkManagerFaceState.managerMetered), [1, 2, 3, 4, 0])
        let bt = LinkInfo(index: 4, name: "bnep0", flags: [.up], sysfs: SysfsFacts(devtype: "bluetooth"))
        XCTAssertEqual(DeviceKind(link: bt, kind: .wired), DeviceKind(link: bt, kind: .other))
        XCTAssertEqual(DeviceKind(link: bt, kind: .wired).connectionType, "bluetooth")
        XCTAssertEqual(DeviceKind(link: LinkInfo(index: 5, name: "wlan0", flags: []), kind: .wifi).deviceType, 2)
        XCTAssertEqual(DeviceKind(link: LinkInfo(index: 6, name: "wg0", flags: [], linkKind: "wireguard"), kind: .other).connectionType, "wireguard")
        XCTAssertEqual(DeviceKind(link: LinkInfo(index: 7, name: "x0", flags: []), kind: .other).deviceType, 14)
    }

    func testUuidIsStableAndShaped() {
        let uuid = NetworkManagerFaceState.uuid(of: "eth0")
        XCTAssertEqual(uuid, NetworkManagerFaceState.uuid(of: "eth0"))
        XCTAssertNotEqual(uuid, NetworkManagerFaceState.uuid(of: "eth1"))
        XCTAssertNotNil(uuid.range(of: #"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$"#, options: .regularExpression), uuid)
    }
}
