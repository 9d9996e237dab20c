import ReachdModel
import ReachdMonitor
import Synchronization
import XCTest

/// SnapshotMerger's Wi-Fi part (issue 50): both daemons' networks in one map, and a network's budget standing given
/// to the link on that network, from the snapshot that says it joined to the one that says it left.
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

    func testANetworksBudgetGoesWithItsNetwork() {
        let merger = SnapshotMerger { [published] snapshot in published.snapshots.withLock { $0.append(snapshot) } }
        merger.update(netlink: NetworkSnapshot())
        let status = { (used: UInt64) in
            BudgetStatus(state: .below, usedBytes: used, limitBytes: 10, period: "day", resetsAt: Timestamp(microseconds: 0))
        }
        merger.update(budgets: ["wlan0": status(7), "wwan0": status(1)], networks: [Array("Phone".utf8): status(2)])
        XCTAssertEqual(last?.budgets["wlan0"], status(7), "not on any network: the interface's budget")
        merger.update(wifi: ["wlan0": network("Phone", .iwd), "wlan1": network("Phone", .wpaSupplicant)], from: .iwd)
        XCTAssertEqual(last?.budgets["wlan0"], status(2), "on the phone: its budget, before the interface's")
        XCTAssertEqual(last?.budgets["wlan1"], status(2), "any link on the phone")
        merger.update(wifi: ["wlan0": network("Home", .iwd)], from: .iwd)
        XCTAssertEqual(last?.budgets, ["wlan0": status(7), "wwan0": status(1)], "the phone's standing left with the phone")
    }
}
