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
    /// a captive portal that holds the client is named: `..., behind a captive portal (https://portal/login)`.
    public var summary: String {
        guard reachable else { return "not reachable: \(reason ?? "unknown reason")" }
        let link = interface.map { " (\($0))" } ?? ""
        let cost = metered ? "metered" + (meteredReason.map { " (\($0))" } ?? "") : "unmetered"
        var portal = ""
        if let captivePortal, captivePortal.captive == true {
            portal = ", behind a captive portal (\(captivePortal.status?.userPortalURL ?? captivePortal.apiURL))"
        }
        return "reachable via \(status.displayName)\(link), \(cost)\(portal)"
    }
}
