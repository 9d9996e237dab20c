import Foundation
import ReachdModel

/// What reachd (the daemon) says of the internet path, where it runs: its interface and whether it is metered.
package struct DaemonMetered: Hashable, Sendable {
    package var interface: String
    package var metered: Bool

    package init(interface: String, metered: Bool) {
        self.interface = interface
        self.metered = metered
    }
}

/// Turns a network snapshot into the `NWPath` one monitor sees: the internet verdict (`InternetVerdict`, the
/// daemons' own judging) over a snapshot restricted to the interface types the monitor allows. Pure.
package struct PathJudge: Sendable {
    package var classifier: InterfaceClassifier
    /// `init(requiredInterfaceType:)`: only this type.
    package var required: NWInterface.InterfaceType?
    /// `init(prohibitedInterfaceTypes:)`: never these types.
    package var prohibited: [NWInterface.InterfaceType]

    package init(classifier: InterfaceClassifier = InterfaceClassifier(), required: NWInterface.InterfaceType? = nil,
                 prohibited: [NWInterface.InterfaceType] = []) {
        self.classifier = classifier
        self.required = required
        self.prohibited = prohibited
    }

    /// The path for `snapshot`; `nameServer`: the resolver has one; `daemon`: reachd's word, where it runs.
    package func path(for snapshot: NetworkSnapshot, nameServer: Bool, daemon: DaemonMetered? = nil) -> NWPath {
        let interfaces = Dictionary(snapshot.links.values.map { ($0.name, interface(for: $0, in: snapshot)) }, uniquingKeysWith: { first, _ in first })
        let allowed = Set(interfaces.values.filter { allows($0.type) }.map { Int32($0.index) })
        let verdict = InternetVerdict(classifier: classifier).verdict(for: restricted(snapshot, to: allowed))
        let families = [verdict.ipv6, verdict.ipv4].filter(\.reachable)
        var used: [NWInterface] = []
        for name in families.compactMap(\.interface) where !used.contains(where: { $0.name == name }) {
            if let interface = interfaces[name] { used.append(interface) }
        }
        let link = snapshot.links.values.first { $0.name == verdict.interface }
        let constrained = link.map { classifier.classify($0, in: snapshot).constrained } ?? false
        let expensive = daemon.flatMap { $0.interface == verdict.interface ? $0.metered : nil } ?? verdict.metered
        return NWPath(
            status: verdict.reachable ? .satisfied : .unsatisfied,
            availableInterfaces: available(in: snapshot, allowed: allowed, interfaces: interfaces),
            usedInterfaces: used,
            isExpensive: verdict.reachable && expensive,
            isConstrained: verdict.reachable && constrained,
            supportsIPv4: verdict.ipv4.reachable,
            supportsIPv6: verdict.ipv6.reachable,
            supportsDNS: verdict.reachable && nameServer,
            gateways: [verdict.ipv4, verdict.ipv6].filter(\.reachable).compactMap { family in
                family.gateway.flatMap { endpoint($0, on: family.interface.flatMap { interfaces[$0] }) }
            }
        )
    }

    /// The Network framework's type of `link`: loopback, else reachd's kind.
    package func interface(for link: LinkInfo, in snapshot: NetworkSnapshot) -> NWInterface {
        let type: NWInterface.InterfaceType
        if link.flags.contains(.loopback) || link.hardwareType == LinkInfo.arpLoopback {
            type = .loopback
        } else {
            type = switch classifier.classify(link, in: snapshot).kind {
            case .wifi: .wifi
            case .wwan: .cellular
            case .wired: .wiredEthernet
            case .other: .other
            }
        }
        return NWInterface(type: type, name: link.name, index: Int(link.index))
    }

    private func allows(_ type: NWInterface.InterfaceType) -> Bool {
        if let required { return type == required }
        return !prohibited.contains(type)
    }

    /// `snapshot` without the default routes' next hops over links outside `allowed` (a route left without
    /// next hops is dropped; rejecting routes, which have none, stay): the kernel's choice among the rest.
    private func restricted(_ snapshot: NetworkSnapshot, to allowed: Set<Int32>) -> NetworkSnapshot {
        var copy = snapshot
        copy.defaultRoutes = snapshot.defaultRoutes.compactMap { route in
            guard !route.nexthops.isEmpty else { return route }
            var kept = route
            kept.nexthops = route.nexthops.filter { allowed.contains($0.interfaceIndex) }
            return kept.nexthops.isEmpty ? nil : kept
        }
        return copy
    }

    /// The allowed links that can carry traffic (up, running, carrier, not ignored, a usable address), by
    /// their lowest default-route metric in the main table, then the rest by index.
    private func available(in snapshot: NetworkSnapshot, allowed: Set<Int32>, interfaces: [String: NWInterface]) -> [NWInterface] {
        var metric: [Int32: UInt32] = [:]
        for route in snapshot.defaultRoutes where route.table == Route.mainTable && route.type == .unicast {
            for hop in route.nexthops { metric[hop.interfaceIndex] = min(metric[hop.interfaceIndex] ?? .max, route.metric) }
        }
        let usable = snapshot.links.values.filter { link in
            allowed.contains(link.index) && link.notOperationalReason == nil && !classifier.classify(link, in: snapshot).ignored
                && snapshot.addresses.contains { $0.interfaceIndex == link.index && $0.isUsableForInternet }
        }
        return usable
            .sorted { (metric[$0.index] ?? .max, $0.index) < (metric[$1.index] ?? .max, $1.index) }
            .compactMap { interfaces[$0.name] }
    }

    /// A gateway as the Network framework gives it: the address (link-local IPv6 scoped to its interface), port 0.
    private func endpoint(_ gateway: ReachdModel.IPAddress, on interface: NWInterface?) -> NWEndpoint? {
        let data = Data(gateway.bytes)
        switch gateway.family {
        case .ipv4:
            return IPv4Address(data).map { .hostPort(host: .ipv4($0), port: .any) }
        case .ipv6:
            let linkLocal = gateway.bytes[0] == 0xfe && gateway.bytes[1] & 0xc0 == 0x80
            return IPv6Address(data, linkLocal ? interface : nil).map { .hostPort(host: .ipv6($0), port: .any) }
        }
    }
}
