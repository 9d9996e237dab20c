/// Flags in the spirit of `SCNetworkReachabilityFlags`; `docs/flags.md` says how each is derived on Linux.
public struct ReachabilityFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The target can be reached with the current configuration.
    public static let reachable = ReachabilityFlags(rawValue: 1 << 1)
    /// The path runs over a tunnel or dial-up link (tun, wireguard, ppp).
    public static let transientConnection = ReachabilityFlags(rawValue: 1 << 0)
    /// A route exists, but its link must first come up (no carrier, not running, no usable address).
    public static let connectionRequired = ReachabilityFlags(rawValue: 1 << 2)
    /// Never set on Linux: nothing dials on traffic.
    public static let connectionOnTraffic = ReachabilityFlags(rawValue: 1 << 3)
    /// Never set on Linux: nothing asks the user.
    public static let interventionRequired = ReachabilityFlags(rawValue: 1 << 4)
    /// Never set on Linux: nothing dials on demand.
    public static let connectionOnDemand = ReachabilityFlags(rawValue: 1 << 5)
    /// The target is an address of this host.
    public static let isLocalAddress = ReachabilityFlags(rawValue: 1 << 16)
    /// The target is on a directly attached network: the route has no gateway.
    public static let isDirect = ReachabilityFlags(rawValue: 1 << 17)
    /// The path runs over a mobile data (WWAN) link.
    public static let isWWAN = ReachabilityFlags(rawValue: 1 << 18)

    /// Every flag with its wire name, in a stable order.
    public static let named: [(name: String, flag: ReachabilityFlags)] = [
        ("reachable", .reachable),
        ("transientConnection", .transientConnection),
        ("connectionRequired", .connectionRequired),
        ("connectionOnTraffic", .connectionOnTraffic),
        ("interventionRequired", .interventionRequired),
        ("connectionOnDemand", .connectionOnDemand),
        ("isLocalAddress", .isLocalAddress),
        ("isDirect", .isDirect),
        ("isWWAN", .isWWAN),
    ]

    /// The names of the flags that are set, in `named` order.
    public var names: [String] { Self.named.filter { contains($0.flag) }.map(\.name) }

    /// Flags from names; nil when a name is unknown.
    public init?(names: [String]) {
        var flags: ReachabilityFlags = []
        for name in names {
            guard let entry = Self.named.first(where: { $0.name == name }) else { return nil }
            flags.insert(entry.flag)
        }
        self = flags
    }
}

/// The three states of the seeds' Reachability sample (Apple's `NetworkStatus`).
public enum ClassicStatus: String, Hashable, Sendable {
    case notReachable
    case reachableViaWiFi
    case reachableViaWWAN

    /// The seeds' decision tree over the flags (Apple's `networkStatusForFlags:`):
    /// not reachable unless `reachable`; WiFi when no connection is required, or when it is made
    /// on demand/on traffic without intervention; WWAN whenever `isWWAN` is set.
    public init(flags: ReachabilityFlags) {
        guard flags.contains(.reachable) else {
            self = .notReachable
            return
        }
        var status = ClassicStatus.notReachable
        if !flags.contains(.connectionRequired) {
            status = .reachableViaWiFi
        }
        if (flags.contains(.connectionOnDemand) || flags.contains(.connectionOnTraffic))
            && !flags.contains(.interventionRequired) {
            status = .reachableViaWiFi
        }
        if flags.contains(.isWWAN) {
            status = .reachableViaWWAN
        }
        self = status
    }
}
