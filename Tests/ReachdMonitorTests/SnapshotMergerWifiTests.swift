import ReachdModel
import ReachdMonitor
import Synchronization
import XCTest

/// SnapshotMerger's Wi-Fi part (issue 50): both daemons' networks in one map, and a network's budget standing left
/// out as soon as its link is on another network.
final class SnapshotMergerWifiTests: XCTestCase {
    /// The snapshots the merger published, in order.
    private final class Published: Sendable {
        let snapshots = Mutex<[NetworkSnapshot]>([])
    }

    private let published = Published()

    private func network(_ ssid: String, _ daemon: WifiDaemon, hints: WifiHints = WifiHints()) -> WifiNetwork {
        WifiNetwork(identity: WifiIdentity(ssid: Array(ssid.utf8))!, hints: hints, daemon: daemon)
    }

    private var last: NetworkSnapshot? { published.snapshots.withLock { $0.last } }

    func testBothDaemonsNetworksMergeAndWpaSupplicantsWinsALinkBothClaim() {
        let merger = SnapshotMerger { [published] snapshot in published.snapshots.withLock { $0.append(snapshot) } }
        merger.update(netlink: NetworkSnapshot())
        merger.update(wifi: ["wlan0": network("Home", .iwd), "wlan1": network("Office", .iwd)], from: .iwd)
        merger.update(wifi: ["wlan1": network("Office", .wpaSupplicant, hints: WifiHints(applePersonalHotspot: true))], from: .wpaSupplicant)
        XCTAssertEqual(last?.wifi["wlan0"]?.daemon, .iwd)
        XCTAssertEqual(last?.wifi["wlan1"]?.daemon, .wpaSupplicant)
        XCTAssertEqual(last?.wifi["wlan1"]?.hints.applePersonalHotspot, true)
        merger.update(wifi: [:], from: .iwd)
        XCTAssertEqual(last?.wifi.keys.sorted(), ["wlan1"], "iwd gone: its networks with it")
    }

    func testANetworksBudgetLeavesTheSnapshotWithItsNetwork() {
        let merger = SnapshotMerger { [published] snapshot in published.snapshots.withLock { $0.append(snapshot) } }
        merger.update(netlink: NetworkSnapshot())
        merger.update(wifi: ["wlan0": network("Phone", .iwd)], from: .iwd)
        let status = BudgetStatus(state: .below, usedBytes: 1, limitBytes: 10, period: "day", resetsAt: Timestamp(microseconds: 0))
        merger.update(budgets: ["wlan0": status, "wwan0": status], onNetworks: ["wlan0": Array("Phone".utf8)])
        XCTAssertEqual(last?.budgets.keys.sorted(), ["wlan0", "wwan0"])
        merger.update(wifi: ["wlan0": network("Home", .iwd)], from: .iwd)
        XCTAssertEqual(last?.budgets.keys.sorted(), ["wwan0"], "the phone's standing is not Home's; an interface's budget stays")
        merger.update(wifi: ["wlan0": network("Phone", .iwd)], from: .iwd)
        XCTAssertEqual(last?.budgets["wlan0"], status)
    }
}
