#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The kind of network an interface connects to.
public enum InterfaceKind: String, Hashable, Sendable, Codable, CaseIterable {
    case wifi
    case wwan
    case wired
    case other
}

/// A configuration rule for interfaces whose name matches a glob.
public struct InterfaceRule: Hashable, Sendable {
    /// A shell glob on the interface name (`fnmatch(3)`), e.g. `usb*` or `eth0`.
    public var match: String
    /// Overrides the detected kind.
    public var kind: InterfaceKind?
    /// Overrides whether the link is metered.
    public var metered: Bool?
    /// reachd acts as if the interface did not exist.
    public var ignore: Bool
    /// The link is in low-data mode (ReachdNetwork's `NWPath.isConstrained`); the daemons do not use it.
    public var constrained: Bool

    public init(match: String, kind: InterfaceKind? = nil, metered: Bool? = nil, ignore: Bool = false, constrained: Bool = false) {
        self.match = match
        self.kind = kind
        self.metered = metered
        self.ignore = ignore
        self.constrained = constrained
    }

    public func matches(_ name: String) -> Bool {
        fnmatch(match, name, 0) == 0
    }
}

/// How reachd judges one interface.
public struct InterfaceClass: Hashable, Sendable {
    public var kind: InterfaceKind
    /// `yes` or `guess-yes` (as GLib counts it).
    public var metered: Bool { meteredState.isMetered }
    public var meteredState: MeteredState
    /// Who decided `meteredState`; nil while it is `unknown`.
    public var meteredSource: MeteredSource?
    /// Why the link is metered, e.g. `interface kind wwan` or `config: usb*`; nil when unmetered.
    public var meteredReason: String?
    /// A tunnel or dial-up link (tun, wireguard, ppp): Apple's transientConnection.
    public var transient: Bool
    /// Loopback, or ignored by the configuration.
    public var ignored: Bool
    /// Configured as low-data (`constrained = true`).
    public var constrained = false
    /// What decided the kind, e.g. `sysfs DEVTYPE=wlan` or `name wl*`.
    public var source: String

    public init(kind: InterfaceKind, meteredState: MeteredState = .unknown, meteredSource: MeteredSource? = nil, meteredReason: String? = nil,
                transient: Bool = false, ignored: Bool = false, source: String) {
        self.kind = kind
        self.meteredState = meteredState
        self.meteredSource = meteredSource
        self.meteredReason = meteredReason
        self.transient = transient
        self.ignored = ignored
        self.source = source
    }
}

/// Decides an interface's kind: the rule for the Wi-Fi network it is on, its interface rule, then sysfs, then
/// naming conventions, then the netlink link kind; and whether it is metered, the first that speaks: the network's
/// rule, the interface's rule, NetworkManager, the beacon's hints (Wi-Fi), networkd's DHCP lease
/// (`ANDROID_METERED`), a tethering device (driver or Bluetooth PAN), the kind (wwan); else a guess of no.
public struct InterfaceClassifier: Hashable, Sendable {
    public var rules: [InterfaceRule]
    /// The `[[network]]` rules, first match wins.
    public var networkRules: [NetworkRule]
    /// The sources below NetworkManager that may speak (`[metered]` in the configuration).
    public var meteredSources: MeteredSources

    public init(rules: [InterfaceRule] = [], networkRules: [NetworkRule] = [], meteredSources: MeteredSources = .all) {
        self.rules = rules
        self.networkRules = networkRules
        self.meteredSources = meteredSources
    }

    private static let transientKinds: Set<String> = ["tun", "tap", "wireguard", "ppp", "gre", "gretap", "ipip", "sit", "vti", "ip6tnl"]

    /// Drivers of USB tethering, with what they are.
    static let tetheringDrivers: [String: String] = ["ipheth": "iPhone USB tethering", "rndis_host": "USB tethering"]

    /// Classifies `link` with what the snapshot knows of it from NetworkManager, networkd and the Wi-Fi daemons.
    public func classify(_ link: LinkInfo, in snapshot: NetworkSnapshot) -> InterfaceClass {
        classify(link, manager: snapshot.managerMetered[link.name], networkd: snapshot.networkd[link.index], wifi: snapshot.wifi[link.name])
    }

    /// `manager`: NetworkManager's `Metered` for the device, when NetworkManager manages it;
    /// `networkd`: what networkd's state files say of the link; `wifi`: the Wi-Fi network it is on (iwd, wpa_supplicant).
    public func classify(_ link: LinkInfo, manager: ManagerMetered? = nil, networkd: NetworkdLinkFacts? = nil, wifi: WifiNetwork? = nil) -> InterfaceClass {
        let rule = rules.first { $0.matches(link.name) }
        let networkRule = wifi.flatMap { network in networkRules.first { $0.matches(network.identity) } }
        var result = detect(link)
        if let rule {
            if let kind = rule.kind {
                result.kind = kind
                result.source = "config: \(rule.match)"
            }
            if rule.ignore { result.ignored = true }
            result.constrained = rule.constrained
        }
        if let networkRule {
            if let kind = networkRule.kind {
                result.kind = kind
                result.source = "network rule: \(networkRule.label)"
            }
            if networkRule.ignore { result.ignored = true }
        }
        let decision = meteredDecision(link, kind: result.kind, rules: (networkRule, rule), manager: manager, networkd: networkd, wifi: wifi)
        result.meteredState = decision.state
        result.meteredSource = decision.source
        result.meteredReason = decision.state.isMetered ? decision.reason : nil
        return result
    }

    /// The first source that speaks, with its reason.
    private func meteredDecision(
        _ link: LinkInfo, kind: InterfaceKind, rules: (network: NetworkRule?, interface: InterfaceRule?), manager: ManagerMetered?,
        networkd: NetworkdLinkFacts?, wifi: WifiNetwork?
    ) -> (state: MeteredState, source: MeteredSource, reason: String) {
        if let rule = rules.network, let metered = rule.metered {
            return (metered ? .yes : .no, .networkRule, "network rule: \(rule.label)")
        }
        if let rule = rules.interface, let metered = rule.metered {
            return (metered ? .yes : .no, .config, "config: \(rule.match)")
        }
        if let manager, let state = MeteredState(manager) {
            return (state, .networkManager, "NetworkManager: \(manager.name)")
        }
        if meteredSources.contains(.wifiHints), let hints = wifi?.hints, let state = hints.meteredState {
            return (state, .wifiHint, "Wi-Fi hint: \(hints.description)")
        }
        let lease = meteredSources.contains(.dhcp) ? networkd?.androidMetered : nil
        if lease == true {
            return (.guessYes, .dhcp, "DHCP: ANDROID_METERED (networkd lease)")
        }
        if meteredSources.contains(.tethering) {
            if let driver = link.sysfs.driver, let what = Self.tetheringDrivers[driver] {
                return (.guessYes, .driver, "driver \(driver) (\(what))")
            }
            if link.sysfs.devtype == "bluetooth" {
                return (.guessYes, .driver, "sysfs DEVTYPE=bluetooth (Bluetooth PAN)")
            }
        }
        if kind == .wwan {
            return (.guessYes, .kind, "interface kind wwan")
        }
        return lease == false ? (.guessNo, .dhcp, "DHCP: no ANDROID_METERED") : (.guessNo, .kind, "interface kind \(kind.rawValue)")
    }

    /// Detection without configuration: sysfs, name, link kind.
    private func detect(_ link: LinkInfo) -> InterfaceClass {
        let transient = link.linkKind.map(Self.transientKinds.contains) ?? false
            || link.hardwareType == LinkInfo.arpPPP
        if link.flags.contains(.loopback) || link.hardwareType == LinkInfo.arpLoopback {
            return InterfaceClass(kind: .other, ignored: true, source: "loopback")
        }
        switch link.sysfs.devtype {
        case "wlan": return InterfaceClass(kind: .wifi, transient: transient, source: "sysfs DEVTYPE=wlan")
        case "wwan": return InterfaceClass(kind: .wwan, transient: transient, source: "sysfs DEVTYPE=wwan")
        default: break
        }
        if link.sysfs.hasPhy80211 { return InterfaceClass(kind: .wifi, transient: transient, source: "sysfs phy80211") }
        if link.sysfs.hasWireless { return InterfaceClass(kind: .wifi, transient: transient, source: "sysfs wireless") }
        let name = link.name
        if name.hasPrefix("wl") { return InterfaceClass(kind: .wifi, transient: transient, source: "name wl*") }
        if name.hasPrefix("ww") { return InterfaceClass(kind: .wwan, transient: transient, source: "name ww*") }
        if name.hasPrefix("en") { return InterfaceClass(kind: .wired, transient: transient, source: "name en*") }
        if name.hasPrefix("eth") { return InterfaceClass(kind: .wired, transient: transient, source: "name eth*") }
        if transient {
            return InterfaceClass(kind: .other, transient: true, source: "link kind \(link.linkKind ?? "ppp")")
        }
        if let kind = link.linkKind {
            return InterfaceClass(kind: .other, source: "link kind \(kind)")
        }
        if link.hardwareType == LinkInfo.arpEther {
            return InterfaceClass(kind: .wired, source: "ethernet hardware")
        }
        return InterfaceClass(kind: .other, source: "hardware type \(link.hardwareType)")
    }
}
