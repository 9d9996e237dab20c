import ReachdModel
import Synchronization

/// Joins the kernel's snapshot with NetworkManager's metered flags, networkd's link facts, the captive portals'
/// answers, the data budgets and ModemManager's roaming links, and hands
/// each result on, one at a time.
package final class SnapshotMerger: Sendable {
    private struct State {
        var netlink: NetworkSnapshot?
        var manager: [String: ManagerMetered] = [:]
        var networkd: [Int32: NetworkdLinkFacts] = [:]
        var portals = CaptivePortalAnswers()
        var budgets: [String: BudgetStatus] = [:]
        var networkBudgets: [[UInt8]: BudgetStatus] = [:]
        var roaming: [String: RoamingSource] = [:]
        var wifi: [WifiDaemon: [String: WifiNetwork]] = [:]
    }

    private let state = Mutex(State())
    private let keepsCaptivePortals: Bool
    private let publish: @Sendable (NetworkSnapshot) -> Void

    /// `keepsCaptivePortals`: false drops the portals networkd records (`[captive_portal] api = false`).
    package init(keepsCaptivePortals: Bool = true, publish: @escaping @Sendable (NetworkSnapshot) -> Void) {
        self.keepsCaptivePortals = keepsCaptivePortals
        self.publish = publish
    }

    package func update(netlink snapshot: NetworkSnapshot) {
        state.withLock { state in
            state.netlink = snapshot
            emit(state)
        }
    }

    package func update(manager values: [String: ManagerMetered]) {
        state.withLock { state in
            state.manager = values
            emit(state)
        }
    }

    package func update(networkd facts: [Int32: NetworkdLinkFacts]) {
        state.withLock { state in
            state.networkd = facts
            emit(state)
        }
    }

    /// The captive-portal APIs' last answers, by API URL, from round `round` of queries; a round older than
    /// the newest one seen is ignored (`CaptivePortalAnswers`).
    package func update(portalStatus: [String: CaptivePortalStatus], round: UInt64) {
        state.withLock { state in
            guard state.portals.take(portalStatus, round: round) else { return }
            emit(state)
        }
    }

    /// The data budgets' standings (reachd's `BudgetMonitor`): the interfaces' budgets by link, and the Wi-Fi
    /// networks' budgets by SSID, which a link on that network takes (before its interface's) from the snapshot
    /// that says it joined, and loses with the one that says it left.
    package func update(budgets: [String: BudgetStatus], networks: [[UInt8]: BudgetStatus] = [:]) {
        state.withLock { state in
            state.budgets = budgets
            state.networkBudgets = networks
            emit(state)
        }
    }

    /// The links on a roaming modem, by name (`ModemManagerRoaming`).
    package func update(roaming: [String: RoamingSource]) {
        state.withLock { state in
            state.roaming = roaming
            emit(state)
        }
    }

    /// The Wi-Fi networks `daemon` says each link has joined (`IwdNetworks`, `WpaSupplicantNetworks`).
    package func update(wifi networks: [String: WifiNetwork], from daemon: WifiDaemon) {
        state.withLock { state in
            state.wifi[daemon] = networks
            emit(state)
        }
    }

    private func emit(_ state: State) {
        guard var snapshot = state.netlink else { return }
        snapshot.managerMetered = state.manager
        snapshot.networkd = keepsCaptivePortals ? state.networkd : state.networkd.mapValues { NetworkdLinkFacts(androidMetered: $0.androidMetered) }
        snapshot.portalStatus = state.portals.byURL
        snapshot.roaming = state.roaming
        // A link both daemons claim: wpa_supplicant's reading, which carries the beacon's hints.
        let wifi = (state.wifi[.iwd] ?? [:]).merging(state.wifi[.wpaSupplicant] ?? [:]) { _, wpaSupplicant in wpaSupplicant }
        snapshot.wifi = wifi
        snapshot.budgets = state.budgets
        for (interface, network) in wifi {
            if let budget = state.networkBudgets[network.identity.ssid] { snapshot.budgets[interface] = budget }
        }
        publish(snapshot)
    }
}
