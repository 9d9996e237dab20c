#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What resolving a host name gave.
public enum Resolution: Hashable, Sendable {
    /// Addresses in the order `getaddrinfo(3)` returns them (RFC 6724: the one tried first comes first).
    case addresses([IPAddress])
    /// The name did not resolve; the text says why (`getaddrinfo`'s message).
    case failed(String)
}

/// The kernel's routing answer for one destination, as `RTM_GETROUTE` gives it.
public enum RouteDecision: Hashable, Sendable {
    case route(type: RouteType, interfaceIndex: Int32, gateway: IPAddress?, source: IPAddress?)
    /// The kernel refused with this errno (`ENETUNREACH`, `EHOSTUNREACH`, `EACCES`, `EINVAL`, ...).
    case refused(errno: Int32)
    /// The kernel's answer was not had: no answer within a second (`ETIMEDOUT`), the request could not be
    /// sent, or the answer could not be read. Not the kernel's word on the route: asked again, never kept
    /// as a verdict.
    case failed(errno: Int32)

    /// Whether this is the kernel's answer (a route or a refusal), not a failed question.
    public var isAnswer: Bool {
        if case .failed = self { return false }
        return true
    }
}

/// A configuration rule that marks destinations as never metered (e.g. a LAN mirror).
public struct UnmeteredDestination: Hashable, Sendable {
    /// A host-name glob (`fnmatch(3)`, case-insensitive), e.g. `mirror.lan` or `*.corp.example`.
    public var host: String?
    /// An address prefix, with `prefixLength`.
    public var prefix: IPAddress?
    public var prefixLength: Int

    public init(host: String? = nil, prefix: IPAddress? = nil, prefixLength: Int = 0) {
        self.host = host
        self.prefix = prefix
        self.prefixLength = prefixLength
    }

    /// Whether the rule covers `name` reached at `address`.
    public func covers(host name: String, address: IPAddress) -> Bool {
        if let host, fnmatch(host.lowercased(), name.lowercased(), 0) == 0 { return true }
        guard let prefix, prefix.family == address.family else { return false }
        var bits = prefixLength
        for (a, b) in zip(prefix.bytes, address.bytes) where bits > 0 {
            let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
            if a & mask != b & mask { return false }
            bits -= 8
        }
        return true
    }
}

/// Judges a host target (Apple's `SCNetworkReachabilityCreateWithName`): the kernel's route to each of its
/// addresses decides, and the link that route leaves on is judged like the internet verdict's link.
public struct HostVerdict: Sendable {
    public var classifier: InterfaceClassifier
    public var unmetered: [UnmeteredDestination]

    public init(classifier: InterfaceClassifier = InterfaceClassifier(), unmetered: [UnmeteredDestination] = []) {
        self.classifier = classifier
        self.unmetered = unmetered
    }

    /// The verdict for `host`: overall from the first address (the one the system tries first), and per family
    /// from the first address of that family.
    public func verdict(host: String, resolution: Resolution, decisions: [IPAddress: RouteDecision], in snapshot: NetworkSnapshot) -> Verdict {
        guard case .addresses(let addresses) = resolution, let first = addresses.first else {
            let none = FamilyVerdict.unreachable(.notResolved, "name not resolved")
            return Verdict(target: host, reachable: false, status: .unreachable, metered: false, meteredReason: nil,
                           interface: nil, flags: [], reason: "name not resolved", family: nil,
                           ipv4: none, ipv6: none, addresses: [], reasonCode: .notResolved)
        }
        func judged(_ address: IPAddress) -> FamilyVerdict {
            judge(host: host, address: address, decision: decisions[address] ?? .failed(errno: ENODATA), in: snapshot)
        }
        func family(_ family: IPAddress.Family) -> FamilyVerdict {
            guard let address = addresses.first(where: { $0.family == family }) else {
                return .unreachable(.noAddress, "no \(family == .ipv4 ? "IPv4" : "IPv6") address")
            }
            return judged(address)
        }
        let overall = judged(first)
        var verdict = Verdict(
            target: host, reachable: overall.reachable, status: overall.status, metered: overall.metered,
            meteredReason: overall.meteredReason, interface: overall.interface, flags: overall.flags,
            reason: overall.reachable ? nil : overall.reason, family: first.family,
            ipv4: family(.ipv4), ipv6: family(.ipv6), addresses: addresses,
            reasonCode: overall.reachable ? nil : overall.reasonCode,
            meteredState: overall.meteredState, meteredSource: overall.meteredSource
        )
        verdict.captivePortal = overall.reachable ? overall.interface.flatMap { CaptivePortal.announced(onInterface: $0, in: snapshot) } : nil
        verdict.budget = overall.reachable ? overall.interface.flatMap { snapshot.budgets[$0] } : nil
        verdict.roamingSource = overall.reachable ? overall.interface.flatMap { snapshot.roaming[$0] } : nil
        verdict.wifiNetwork = overall.reachable ? overall.interface.flatMap { snapshot.wifi[$0]?.identity } : nil
        return verdict
    }

    /// One address: the route the kernel chose, and the link it leaves on.
    public func judge(host: String, address: IPAddress, decision: RouteDecision, in snapshot: NetworkSnapshot) -> FamilyVerdict {
        switch decision {
        case .refused(let code):
            return .unreachable(Self.refusalCode(code), Self.refusal(code, address))
        case .failed(let code):
            return .unreachable(.lookupFailed, "route lookup for \(address) failed: \(String(cString: strerror(code)))")
        case .route(let type, let index, let gateway, let source):
            if type.rejects { return .unreachable(.rejectingRoute, "route to \(address) is \(type)") }
            guard let link = snapshot.links[index] else {
                return .unreachable(.unknownInterface, "route to \(address) leaves on an unknown interface (index \(index))")
            }
            if type == .local {
                return FamilyVerdict(reachable: true, status: .other, flags: [.reachable, .isLocalAddress, .isDirect],
                                     interface: link.name, kind: .other, kindSource: "local address")
            }
            let linkClass = classifier.classify(link, in: snapshot)
            var flags: ReachabilityFlags = linkClass.transient ? [.transientConnection] : []
            if linkClass.ignored {
                return .unreachable(.ignoredInterface, "route to \(address) leaves on \(link.name), which the configuration ignores", interface: link.name)
            }
            if let why = link.notOperationalReason {
                return .unreachable(.interfaceNotOperational, why, flags: flags.union(.connectionRequired), interface: link.name)
            }
            guard source != nil else {
                return .unreachable(.noSourceAddress, "\(link.name) has no source address for \(address)", flags: flags.union(.connectionRequired), interface: link.name)
            }
            flags.insert(.reachable)
            if gateway == nil { flags.insert(.isDirect) }
            if linkClass.kind == .wwan { flags.insert(.isWWAN) }
            let exempt = unmetered.contains { $0.covers(host: host, address: address) }
            return FamilyVerdict(
                reachable: true, status: ReachabilityStatus(kind: linkClass.kind), flags: flags,
                metered: linkClass.metered && !exempt,
                meteredState: exempt ? .no : linkClass.meteredState, meteredSource: exempt ? .config : linkClass.meteredSource,
                meteredReason: exempt ? nil : linkClass.meteredReason,
                interface: link.name, kind: linkClass.kind, kindSource: linkClass.source, gateway: gateway
            )
        }
    }

    /// The reason code of a refused route lookup: ENETUNREACH is "no route"; the kernel's answers for
    /// `unreachable`, `prohibit` and `blackhole` routes are a rejecting route.
    static func refusalCode(_ code: Int32) -> ReasonCode {
        switch code {
        case ENETUNREACH: .noRoute
        case EHOSTUNREACH, EACCES, EINVAL: .rejectingRoute
        default: .lookupFailed
        }
    }

    static func refusal(_ code: Int32, _ address: IPAddress) -> String {
        switch code {
        case ENETUNREACH: "no route to \(address)"
        case EHOSTUNREACH: "route to \(address) is unreachable"
        case EACCES: "route to \(address) is prohibited"
        case EINVAL: "route to \(address) is a blackhole"
        default: "route lookup for \(address) failed: \(String(cString: strerror(code)))"
        }
    }
}
