/// The status strings of the protocol: not reachable, or the kind of link the traffic leaves on.
public enum ReachabilityStatus: String, Hashable, Sendable, Codable, CaseIterable {
    case unreachable
    case wired
    case wifi
    case wwan
    case other

    public init(kind: InterfaceKind) {
        switch kind {
        case .wired: self = .wired
        case .wifi: self = .wifi
        case .wwan: self = .wwan
        case .other: self = .other
        }
    }
}

/// The verdict for one address family's path.
public struct FamilyVerdict: Hashable, Sendable {
    public var reachable: Bool
    public var status: ReachabilityStatus
    public var flags: ReachabilityFlags
    public var metered: Bool
    /// NetworkManager's five states; `metered` is true for `yes` and `guess-yes`.
    public var meteredState: MeteredState
    /// Who decided `meteredState`.
    public var meteredSource: MeteredSource?
    public var meteredReason: String?
    public var interface: String?
    public var kind: InterfaceKind?
    /// What decided `kind`, e.g. `name wl*` or `config: usb*`.
    public var kindSource: String?
    public var gateway: IPAddress?
    public var metric: UInt32?
    /// Why it is not reachable, or which route was chosen.
    public var reason: String?
    /// Why it is not reachable, for programs; nil when reachable.
    public var reasonCode: ReasonCode?

    public init(
        reachable: Bool, status: ReachabilityStatus, flags: ReachabilityFlags, metered: Bool = false,
        meteredState: MeteredState? = nil, meteredSource: MeteredSource? = nil,
        meteredReason: String? = nil, interface: String? = nil, kind: InterfaceKind? = nil, kindSource: String? = nil,
        gateway: IPAddress? = nil, metric: UInt32? = nil, reason: String? = nil, reasonCode: ReasonCode? = nil
    ) {
        self.reachable = reachable
        self.status = status
        self.flags = flags
        self.metered = metered
        self.meteredState = meteredState ?? MeteredState(metered: metered, reachable: reachable)
        self.meteredSource = meteredSource
        self.meteredReason = meteredReason
        self.interface = interface
        self.kind = kind
        self.kindSource = kindSource
        self.gateway = gateway
        self.metric = metric
        self.reason = reason
        self.reasonCode = reasonCode
    }

    /// Not reachable, for a reason.
    public static func unreachable(_ code: ReasonCode, _ reason: String, flags: ReachabilityFlags = [], interface: String? = nil) -> FamilyVerdict {
        FamilyVerdict(reachable: false, status: .unreachable, flags: flags, interface: interface, reason: reason, reasonCode: code)
    }
}

/// What reachd says about one target: the derived state, without sequence or time.
public struct Verdict: Hashable, Sendable {
    /// `internet` for the default route.
    public var target: String
    public var reachable: Bool
    public var status: ReachabilityStatus
    public var metered: Bool
    /// NetworkManager's five states; `metered` is true for `yes` and `guess-yes`.
    public var meteredState: MeteredState
    /// Who decided `meteredState`.
    public var meteredSource: MeteredSource?
    public var meteredReason: String?
    public var interface: String?
    public var flags: ReachabilityFlags
    /// Why it is not reachable; nil when reachable.
    public var reason: String?
    /// Why it is not reachable, for programs; nil when reachable (and from a reachd too old to say).
    public var reasonCode: ReasonCode?
    /// The family the overall verdict was taken from.
    public var family: IPAddress.Family?
    public var ipv4: FamilyVerdict
    public var ipv6: FamilyVerdict
    /// For a host target: its addresses in the order the system tries them; nil for `internet`.
    public var addresses: [IPAddress]?
    /// For `internet`: what the connectivity check says (`unknown` without a check), or the captive-portal API.
    public var connectivity: Connectivity = .unknown
    /// The captive portal the network announced on the path's link (RFC 8910), with its API's answer.
    public var captivePortal: CaptivePortal?
    /// The data budget of the path's link (`[[budget]]`), when it has one; nil when not reachable.
    public var budget: BudgetStatus?
    /// Who says the path's link roams (a modem on a visited network); nil when it does not, or when not reachable.
    public var roamingSource: RoamingSource?
    /// The Wi-Fi network the path's link is on (iwd, wpa_supplicant); nil for other links, or when not reachable.
    public var wifiNetwork: WifiIdentity?

    public init(
        target: String, reachable: Bool, status: ReachabilityStatus, metered: Bool, meteredReason: String?,
        interface: String?, flags: ReachabilityFlags, reason: String?, family: IPAddress.Family?,
        ipv4: FamilyVerdict, ipv6: FamilyVerdict, addresses: [IPAddress]? = nil, reasonCode: ReasonCode? = nil,
        meteredState: MeteredState? = nil, meteredSource: MeteredSource? = nil
    ) {
        self.target = target
        self.reachable = reachable
        self.status = status
        self.metered = metered
        self.meteredState = meteredState ?? MeteredState(metered: metered, reachable: reachable)
        self.meteredSource = meteredSource
        self.meteredReason = meteredReason
        self.interface = interface
        self.flags = flags
        self.reason = reason
        self.family = family
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.addresses = addresses
        self.reasonCode = reasonCode
    }

    /// The seeds' three-state reading of the flags.
    public var classicStatus: ClassicStatus { ClassicStatus(flags: flags) }
}

/// A verdict as published: with its sequence number and the time it was derived.
public struct StampedVerdict: Hashable, Sendable {
    public var verdict: Verdict
    /// Increases by one with every published change, starting at 1.
    public var sequence: UInt64
    public var timestamp: Timestamp

    public init(verdict: Verdict, sequence: UInt64, timestamp: Timestamp) {
        self.verdict = verdict
        self.sequence = sequence
        self.timestamp = timestamp
    }
}
