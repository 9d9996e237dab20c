/// The state of the network as a path monitor sees it, as in Apple's Network framework.
///
/// Here a path is reachd's internet verdict, judged over the interfaces the monitor allows: see
/// <doc:PortingGuide> for where each property comes from.
public struct NWPath: Equatable, CustomDebugStringConvertible, Sendable {
    /// Whether the path can carry traffic.
    public enum Status: Equatable, Hashable, Sendable {
        /// A default route over an allowed interface that is up, running, with carrier and a usable address.
        case satisfied
        /// No such route.
        case unsatisfied
        /// Never given on Linux: nothing brings a link up on demand when a connection starts.
        case requiresConnection
    }

    /// Why a path is unsatisfied.
    public enum UnsatisfiedReason: Equatable, Hashable, Sendable {
        /// No reason is given: always the case here.
        case notAvailable
        /// Never given on Linux (there is no per-app cellular setting).
        case cellularDenied
        /// Never given on Linux (there is no per-app Wi-Fi setting).
        case wifiDenied
        /// Never given on Linux (there is no local-network privacy setting).
        case localNetworkDenied
        /// Never given on Linux (there is no always-on VPN profile to wait for).
        case vpnInactive
    }

    public let status: Status
    public let unsatisfiedReason: UnsatisfiedReason
    /// The usable interfaces the monitor allows, in the order the kernel would use them: by their default
    /// routes' metric, then those without a default route, by index.
    public let availableInterfaces: [NWInterface]
    /// The path's interface is metered (reachd's metered verdict: configuration, NetworkManager, the DHCP lease,
    /// tethering drivers, the interface kind).
    public let isExpensive: Bool
    /// The path's interface is configured as low-data (`[[interface]] constrained = true` in reachd's
    /// configuration): Linux has no Low Data Mode of its own (see <doc:PortingGuide>).
    public let isConstrained: Bool
    /// An IPv4 default route is usable.
    public let supportsIPv4: Bool
    /// An IPv6 default route is usable.
    public let supportsIPv6: Bool
    /// The path is satisfied and the resolver has a name server (`/etc/resolv.conf`).
    public let supportsDNS: Bool
    /// The gateways of the routes the path takes (IPv4, then IPv6), with port 0.
    public let gateways: [NWEndpoint]
    /// Never set by a path monitor (as on Apple's platforms).
    public let localEndpoint: NWEndpoint?
    /// Never set by a path monitor (as on Apple's platforms).
    public let remoteEndpoint: NWEndpoint?
    /// The interfaces the traffic leaves on (the IPv6 route's, then the IPv4 route's).
    let usedInterfaces: [NWInterface]

    package init(status: Status, availableInterfaces: [NWInterface], usedInterfaces: [NWInterface], isExpensive: Bool,
                 isConstrained: Bool, supportsIPv4: Bool, supportsIPv6: Bool, supportsDNS: Bool, gateways: [NWEndpoint]) {
        self.status = status
        unsatisfiedReason = .notAvailable
        self.availableInterfaces = availableInterfaces
        self.usedInterfaces = usedInterfaces
        self.isExpensive = isExpensive
        self.isConstrained = isConstrained
        self.supportsIPv4 = supportsIPv4
        self.supportsIPv6 = supportsIPv6
        self.supportsDNS = supportsDNS
        self.gateways = gateways
        localEndpoint = nil
        remoteEndpoint = nil
    }

    /// The path before anything is known (and after `cancel`): unsatisfied, no interfaces.
    package static let unknown = NWPath(
        status: .unsatisfied, availableInterfaces: [], usedInterfaces: [], isExpensive: false, isConstrained: false,
        supportsIPv4: false, supportsIPv6: false, supportsDNS: false, gateways: []
    )

    /// Whether the path's traffic leaves on an interface of `type`.
    public func usesInterfaceType(_ type: NWInterface.InterfaceType) -> Bool {
        usedInterfaces.contains { $0.type == type }
    }

    public var debugDescription: String {
        let interfaces = usedInterfaces.map(\.name).joined(separator: ",")
        return "\(status)" + (interfaces.isEmpty ? "" : " (\(interfaces))") + (isExpensive ? ", expensive" : "")
    }
}
