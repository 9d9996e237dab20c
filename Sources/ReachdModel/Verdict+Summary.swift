extension ReachabilityStatus {
    /// How people name the link kind: `WiFi`, `WWAN`, `wired`, `other link`.
    public var displayName: String {
        switch self {
        case .unreachable: "no link"
        case .wired: "wired"
        case .wifi: "WiFi"
        case .wwan: "WWAN"
        case .other: "other link"
        }
    }
}

extension Verdict {
    /// One line for people: `reachable via WiFi (wlan0), unmetered` or `not reachable: no IPv4 default route`;
    /// a captive portal that holds the client is named: `..., behind a captive portal (https://portal/login)`;
    /// a data budget is counted: `..., 4.6 of 5.0 GB used this month (approaching)`; a roaming link is named:
    /// `..., roaming (ModemManager)`; a Wi-Fi network is named beside its link: `WiFi (wlan0, "Home")`, and a network
    /// rule or a beacon's hint that says unmetered is named too: `unmetered (network rule)`.
    public var summary: String {
        guard reachable else { return "not reachable: \(reason ?? "unknown reason")" }
        let network = wifiNetwork.map { ", \"\($0.name)\"" } ?? ""
        let link = interface.map { " (\($0)\(network))" } ?? ""
        let unmetered = [.networkRule, .wifiHint].contains(meteredSource) ? "unmetered (\(meteredSource!.rawValue))" : "unmetered"
        let cost = metered ? "metered" + (meteredReason.map { " (\($0))" } ?? "") : unmetered
        var portal = ""
        if let captivePortal, captivePortal.captive == true {
            portal = ", behind a captive portal (\(captivePortal.status?.userPortalURL ?? captivePortal.apiURL))"
        }
        let budget = self.budget.map { ", \($0.summary)" } ?? ""
        let roaming = roamingSource.map { ", roaming (\($0.rawValue))" } ?? ""
        return "reachable via \(status.displayName)\(link), \(cost)\(roaming)\(portal)\(budget)"
    }
}

extension BudgetStatus {
    /// `4.6 of 5.0 GB used this month (approaching)`: decimal units chosen by the limit, tenths rounded down.
    public var summary: String {
        let units: [(UInt64, String)] = [(1_000_000_000_000, "TB"), (1_000_000_000, "GB"), (1_000_000, "MB"), (1_000, "kB")]
        let when = switch period {
        case "day": "today"
        case "week": "this week"
        default: "this month"
        }
        guard let (unit, name) = units.first(where: { limitBytes >= $0.0 }) else {
            return "\(usedBytes) of \(limitBytes) B used \(when) (\(state.rawValue))"
        }
        func tenths(_ bytes: UInt64) -> String { "\(bytes / unit).\(bytes % unit / (unit / 10))" }
        return "\(tenths(usedBytes)) of \(tenths(limitBytes)) \(name) used \(when) (\(state.rawValue))"
    }
}
