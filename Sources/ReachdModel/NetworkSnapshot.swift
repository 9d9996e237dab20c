/// Administrative and operational flags of a link (`IFF_*` in `<linux/if.h>`).
public struct LinkFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `IFF_UP`: administratively up.
    public static let up = LinkFlags(rawValue: 0x1)
    /// `IFF_LOOPBACK`.
    public static let loopback = LinkFlags(rawValue: 0x8)
    /// `IFF_POINTOPOINT`.
    public static let pointToPoint = LinkFlags(rawValue: 0x10)
    /// `IFF_RUNNING`: operationally up (RFC 2863 "up").
    public static let running = LinkFlags(rawValue: 0x40)
    /// `IFF_LOWER_UP`: the driver signals L1 up (carrier).
    public static let lowerUp = LinkFlags(rawValue: 0x10000)
}

/// What `/sys/class/net/IF/` says about a link's device type.
public struct SysfsFacts: Hashable, Sendable {
    /// `DEVTYPE=` from `uevent` (`wlan`, `wwan`, `bridge`, ...), if any.
    public var devtype: String?
    /// The `wireless/` directory exists (wireless extensions).
    public var hasWireless: Bool
    /// The `phy80211` link exists (cfg80211 device).
    public var hasPhy80211: Bool
    /// The device's driver (`device/driver`'s name: `ipheth`, `rndis_host`, `e1000e` ...); nil for virtual links.
    public var driver: String?

    public init(devtype: String? = nil, hasWireless: Bool = false, hasPhy80211: Bool = false, driver: String? = nil) {
        self.devtype = devtype
        self.hasWireless = hasWireless
        self.hasPhy80211 = hasPhy80211
        self.driver = driver
    }

    /// No sysfs information (device absent or not readable).
    public static let none = SysfsFacts()
}

/// One network interface as the kernel reports it.
public struct LinkInfo: Hashable, Sendable {
    /// `ARPHRD_LOOPBACK`.
    public static let arpLoopback: UInt32 = 772
    /// `ARPHRD_ETHER`.
    public static let arpEther: UInt32 = 1
    /// `ARPHRD_PPP`.
    public static let arpPPP: UInt32 = 512
    /// `ARPHRD_NONE` (tun, wireguard).
    public static let arpNone: UInt32 = 0xFFFE

    public var index: Int32
    public var name: String
    public var flags: LinkFlags
    /// `IFLA_CARRIER`; nil when the kernel did not say.
    public var carrier: Bool?
    /// `IFLA_INFO_KIND` (`veth`, `bridge`, `wireguard`, `tun`, `ppp`, ...), nil for plain hardware.
    public var linkKind: String?
    /// The hardware type (`ARPHRD_*`).
    public var hardwareType: UInt32
    /// Device-type facts read from sysfs.
    public var sysfs: SysfsFacts

    public init(
        index: Int32, name: String, flags: LinkFlags, carrier: Bool? = nil,
        linkKind: String? = nil, hardwareType: UInt32 = LinkInfo.arpEther, sysfs: SysfsFacts = .none
    ) {
        self.index = index
        self.name = name
        self.flags = flags
        self.carrier = carrier
        self.linkKind = linkKind
        self.hardwareType = hardwareType
        self.sysfs = sysfs
    }

    /// What the kernel accepts as a link name: 1 to 15 bytes, no `/`, no whitespace or control character, not `.` or `..`.
    public static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...15).contains(bytes.count), name != ".", name != ".." else { return false }
        return bytes.allSatisfy { $0 > 0x20 && $0 != 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: ":") }
    }

    /// The driver reports carrier (`IFF_LOWER_UP`, and `IFLA_CARRIER` when present).
    public var hasCarrier: Bool { flags.contains(.lowerUp) && carrier != false }

    /// Why the link cannot carry traffic, or nil when it can.
    public var notOperationalReason: String? {
        if !flags.contains(.up) { return "\(name) is down" }
        if !hasCarrier { return "\(name) has no carrier" }
        if !flags.contains(.running) { return "\(name) is not running" }
        return nil
    }
}

/// Flags of an interface address (`IFA_F_*`).
public struct AddressFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `IFA_F_DADFAILED`.
    public static let dadFailed = AddressFlags(rawValue: 0x08)
    /// `IFA_F_DEPRECATED`.
    public static let deprecated = AddressFlags(rawValue: 0x20)
    /// `IFA_F_TENTATIVE`: duplicate address detection has not finished.
    public static let tentative = AddressFlags(rawValue: 0x40)
}

/// An address assigned to an interface.
public struct InterfaceAddress: Hashable, Sendable {
    /// `RT_SCOPE_UNIVERSE`.
    public static let scopeUniverse: UInt8 = 0
    /// `RT_SCOPE_SITE`.
    public static let scopeSite: UInt8 = 200
    /// `RT_SCOPE_LINK`.
    public static let scopeLink: UInt8 = 253

    public var interfaceIndex: Int32
    public var address: IPAddress
    public var prefixLength: UInt8
    public var scope: UInt8
    public var flags: AddressFlags

    public init(interfaceIndex: Int32, address: IPAddress, prefixLength: UInt8, scope: UInt8 = 0, flags: AddressFlags = []) {
        self.interfaceIndex = interfaceIndex
        self.address = address
        self.prefixLength = prefixLength
        self.scope = scope
        self.flags = flags
    }

    /// Usable as a source for traffic beyond the link: global or site scope, not tentative, DAD not failed.
    public var isUsableForInternet: Bool {
        (scope == Self.scopeUniverse || scope == Self.scopeSite)
            && !flags.contains(.tentative) && !flags.contains(.dadFailed)
    }
}

/// One next hop of a route.
///
/// Its `RTNH_F_DEAD` and `RTNH_F_LINKDOWN` flags are not kept: the kernel changes them on carrier changes
/// without telling netlink listeners, so a cached copy goes stale. The link's own state decides instead.
public struct Nexthop: Hashable, Sendable {
    public var interfaceIndex: Int32
    public var gateway: IPAddress?

    public init(interfaceIndex: Int32, gateway: IPAddress? = nil) {
        self.interfaceIndex = interfaceIndex
        self.gateway = gateway
    }
}

/// The route type (`RTN_*`).
public enum RouteType: UInt8, Hashable, Sendable {
    case unspecified = 0, unicast = 1, local = 2, broadcast = 3, anycast = 4, multicast = 5
    case blackhole = 6, unreachable = 7, prohibit = 8, `throw` = 9, nat = 10, xresolve = 11

    /// Whether the kernel drops traffic that takes this route.
    public var rejects: Bool { self == .blackhole || self == .unreachable || self == .prohibit }
}

/// A route from the kernel's routing tables.
public struct Route: Hashable, Sendable {
    /// `RT_TABLE_MAIN`.
    public static let mainTable: UInt32 = 254

    public var family: IPAddress.Family
    public var table: UInt32
    public var type: RouteType
    /// Destination prefix; nil with `prefixLength` 0 means the default route.
    public var destination: IPAddress?
    public var prefixLength: UInt8
    /// The route's priority (metric); lower wins.
    public var metric: UInt32
    public var nexthops: [Nexthop]

    public init(
        family: IPAddress.Family, table: UInt32 = Route.mainTable, type: RouteType = .unicast,
        destination: IPAddress? = nil, prefixLength: UInt8 = 0, metric: UInt32 = 0, nexthops: [Nexthop] = []
    ) {
        self.family = family
        self.table = table
        self.type = type
        self.destination = destination
        self.prefixLength = prefixLength
        self.metric = metric
        self.nexthops = nexthops
    }

    public var isDefault: Bool { prefixLength == 0 }
}

/// The `ignore_routes_with_linkdown` sysctls, as netconf reports them.
public struct LinkdownPolicy: Hashable, Sendable {
    /// Per family, per interface index; index -1 is `all`.
    public var ignore: [IPAddress.Family: [Int32: Bool]]

    /// `NETCONFA_IFINDEX_ALL`.
    public static let allInterfaces: Int32 = -1

    public init(ignore: [IPAddress.Family: [Int32: Bool]] = [:]) { self.ignore = ignore }

    /// Whether the kernel skips routes over `index` while it has no carrier.
    /// IPv4 honours `conf/all` or the device's value; IPv6 only the device's (the kernel copies `all` into it).
    public func ignoresLinkdown(family: IPAddress.Family, interfaceIndex index: Int32) -> Bool {
        let values = ignore[family] ?? [:]
        let device = values[index] ?? false
        switch family {
        case .ipv4: return device || (values[Self.allInterfaces] ?? false)
        case .ipv6: return device
        }
    }
}

/// Everything reachd knows about the host's network at one moment.
public struct NetworkSnapshot: Hashable, Sendable {
    public var links: [Int32: LinkInfo]
    public var addresses: [InterfaceAddress]
    /// The default routes (prefix length 0) of every table: all the internet verdict needs. Hosts ask the
    /// kernel for their route, so no other route is kept (a full Internet table has a million).
    public var defaultRoutes: [Route]
    public var linkdownPolicy: LinkdownPolicy
    /// Changes whenever the policy rules (`ip rule`) change; the kernel's route lookups read them.
    public var ruleGeneration: UInt64 = 0
    /// The uid ranges the policy rules select by: whose host verdicts are judged for them alone.
    public var uidRules = UIDRouteRules()
    /// Changes when any route changed since (coalesced, see `ChangeCoalescer`); the kernel's route lookups
    /// for hosts may answer differently.
    public var routeGeneration: UInt64 = 0
    /// NetworkManager's `Metered` of the device carrying each interface (by name), when NetworkManager runs.
    public var managerMetered: [String: ManagerMetered] = [:]
    /// What networkd's state files say of each link (by index), where networkd runs.
    public var networkd: [Int32: NetworkdLinkFacts] = [:]
    /// The last answer of each announced captive-portal API (by its URL), where reachd asks them.
    public var portalStatus: [String: CaptivePortalStatus] = [:]
    /// The data budget of each link that has one (by name), where reachd counts budgets.
    public var budgets: [String: BudgetStatus] = [:]
    /// The links on a roaming modem (by name), with who said so, where ModemManager runs.
    public var roaming: [String: RoamingSource] = [:]
    /// The Wi-Fi network each link has joined (by name), where iwd or wpa_supplicant runs.
    public var wifi: [String: WifiNetwork] = [:]

    public init(
        links: [LinkInfo] = [], addresses: [InterfaceAddress] = [], defaultRoutes: [Route] = [],
        linkdownPolicy: LinkdownPolicy = LinkdownPolicy()
    ) {
        self.links = Dictionary(links.map { ($0.index, $0) }, uniquingKeysWith: { _, new in new })
        self.addresses = addresses
        self.defaultRoutes = defaultRoutes
        self.linkdownPolicy = linkdownPolicy
    }

    /// The addresses of one interface in one family.
    public func addresses(of index: Int32, family: IPAddress.Family) -> [InterfaceAddress] {
        addresses.filter { $0.interfaceIndex == index && $0.address.family == family }
    }
}

/// NetworkManager's `NMMetered` value of a device (org.freedesktop.NetworkManager.Device.Metered).
public enum ManagerMetered: UInt32, Hashable, Sendable, CaseIterable {
    case unknown = 0
    case yes = 1
    case no = 2
    case guessYes = 3
    case guessNo = 4

    /// nil for unknown (NetworkManager has no opinion), else whether the link is metered.
    public var metered: Bool? {
        switch self {
        case .unknown: nil
        case .yes, .guessYes: true
        case .no, .guessNo: false
        }
    }

    /// As NetworkManager's own tools write it: `yes`, `guess-yes` …
    public var name: String {
        switch self {
        case .unknown: "unknown"
        case .yes: "yes"
        case .no: "no"
        case .guessYes: "guess-yes"
        case .guessNo: "guess-no"
        }
    }
}
