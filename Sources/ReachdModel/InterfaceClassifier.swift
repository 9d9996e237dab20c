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

    public init(match: String, kind: InterfaceKind? = nil, metered: Bool? = nil, ignore: Bool = false) {
        self.match = match
        self.kind = kind
        self.metered = metered
        self.ignore = ignore
    }

    public func matches(_ name: String) -> Bool {
        fnmatch(match, name, 0) == 0
    }
}

/// How reachd judges one interface.
public struct InterfaceClass: Hashable, Sendable {
    public var kind: InterfaceKind
    public var metered: Bool
    /// Why the link is metered, e.g. `interface kind wwan` or `config: usb*`; nil when unmetered.
    public var meteredReason: String?
    /// A tunnel or dial-up link (tun, wireguard, ppp): Apple's transientConnection.
    public var transient: Bool
    /// Loopback, or ignored by the configuration.
    public var ignored: Bool
    /// What decided the kind, e.g. `sysfs DEVTYPE=wlan` or `name wl*`.
    public var source: String

    public init(kind: InterfaceKind, metered: Bool = false, meteredReason: String? = nil,
                transient: Bool = false, ignored: Bool = false, source: String) {
        self.kind = kind
        self.metered = metered
        self.meteredReason = meteredReason
        self.transient = transient
        self.ignored = ignored
        self.source = source
    }
}

/// Decides an interface's kind: configuration, then sysfs, then naming conventions, then the netlink link kind;
/// and whether it is metered: configuration, then NetworkManager's flag, then the kind (wwan).
public struct InterfaceClassifier: Hashable, Sendable {
    public var rules: [InterfaceRule]

    public init(rules: [InterfaceRule] = []) { self.rules = rules }

    private static let transientKinds: Set<String> = ["tun", "tap", "wireguard", "ppp", "gre", "gretap", "ipip", "sit", "vti", "ip6tnl"]

    /// `manager`: NetworkManager's `Metered` for the device, when NetworkManager manages it.
    public func classify(_ link: LinkInfo, manager: ManagerMetered? = nil) -> InterfaceClass {
        let rule = rules.first { $0.matches(link.name) }
        var result = detect(link)
        if let rule {
            if let kind = rule.kind {
                result.kind = kind
                result.source = "config: \(rule.match)"
            }
            if rule.ignore { result.ignored = true }
        }
        if let metered = rule?.metered, let rule {
            result.metered = metered
            result.meteredReason = metered ? "config: \(rule.match)" : nil
        } else if let manager, let metered = manager.metered {
            result.metered = metered
            result.meteredReason = metered ? "NetworkManager: \(manager.name)" : nil
        } else if result.kind == .wwan {
            result.metered = true
            result.meteredReason = "interface kind wwan"
        }
        return result
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
