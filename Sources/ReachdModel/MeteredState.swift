/// Whether a link is metered, as NetworkManager states it (`NMMetered`): a definite word from whoever knows
/// (`yes`, `no`), a guess from what the link looks like (`guess-yes`, `guess-no`), or nothing known.
public enum MeteredState: String, Hashable, Sendable, Codable, CaseIterable {
    case yes
    case no
    case guessYes = "guess-yes"
    case guessNo = "guess-no"
    case unknown

    /// `yes` and `guess-yes` count as metered, as GLib's NetworkManager monitor counts them.
    public var isMetered: Bool { self == .yes || self == .guessYes }

    /// The state a plain flag stands for (a verdict made by hand, or from a reachd too old to say): a guess
    /// either way on a reachable path, else `unknown`.
    public init(metered: Bool, reachable: Bool) {
        self = metered ? .guessYes : reachable ? .guessNo : .unknown
    }

    /// NetworkManager's value in reachd's words; nil for `unknown` (NetworkManager has no opinion).
    public init?(_ manager: ManagerMetered) {
        switch manager {
        case .unknown: return nil
        case .yes: self = .yes
        case .no: self = .no
        case .guessYes: self = .guessYes
        case .guessNo: self = .guessNo
        }
    }
}

/// Who decided a link's `MeteredState`, in order of precedence.
public enum MeteredSource: String, Hashable, Sendable, Codable, CaseIterable {
    /// A `[[network]]` rule with `metered =` for the Wi-Fi network the link is on.
    case networkRule = "network rule"
    /// An `[[interface]]` rule with `metered =`.
    case config
    /// NetworkManager's `Metered` property of the device.
    case networkManager = "NetworkManager"
    /// The Wi-Fi network's beacon: Microsoft's Network Cost element or Apple's Personal Hotspot element (`WifiHints`).
    case wifiHint = "Wi-Fi hint"
    /// The DHCP lease: option 43 with `ANDROID_METERED` (what Android hotspots and USB tethering send).
    case dhcp = "DHCP"
    /// A tethering device: the driver (`ipheth`, `rndis_host`) or sysfs `DEVTYPE=bluetooth`.
    case driver
    /// The interface kind (wwan is metered; every other kind is a guess of not metered).
    case kind
}

/// Which of the metered sources below NetworkManager the configuration lets speak (`[metered]`).
public struct MeteredSources: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// networkd's DHCP lease (`ANDROID_METERED`).
    public static let dhcp = MeteredSources(rawValue: 1)
    /// Tethering drivers and Bluetooth PAN.
    public static let tethering = MeteredSources(rawValue: 2)
    /// The Wi-Fi beacon's cost elements (`WifiHints`).
    public static let wifiHints = MeteredSources(rawValue: 4)
    public static let all: MeteredSources = [.dhcp, .tethering, .wifiHints]
}

/// What networkd says about one link, read from its state files (`/run/systemd/netif/`).
public struct NetworkdLinkFacts: Hashable, Sendable {
    /// The current DHCPv4 lease carries option 43 with `ANDROID_METERED`; nil without a readable lease.
    public var androidMetered: Bool?
    /// The captive-portal API URI the network announced (RFC 8910), as networkd ≥ 254 records it.
    public var captivePortal: String?

    public init(androidMetered: Bool? = nil, captivePortal: String? = nil) {
        self.androidMetered = androidMetered
        self.captivePortal = captivePortal
    }
}
