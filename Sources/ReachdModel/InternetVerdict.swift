/// Computes the verdict for the target "internet" (Apple's 0.0.0.0 target) from a snapshot.
///
/// Per family, the kernel's choice among the default routes of the main table is taken: the lowest
/// metric whose next hop's device is up, skipping next hops without carrier only where the interface's
/// `ignore_routes_with_linkdown` is set (as the kernel does). Carrier is read from the link, not from the
/// route's `dead`/`linkdown` flags, which the kernel changes without telling netlink listeners. The chosen link then decides: it must be
/// up, running, with carrier and a usable address of the family. The overall verdict comes from IPv6
/// when that path is reachable (RFC 6724 prefers native IPv6), else from IPv4.
public struct InternetVerdict: Sendable {
    public var classifier: InterfaceClassifier

    public init(classifier: InterfaceClassifier = InterfaceClassifier()) {
        self.classifier = classifier
    }

    public func verdict(for snapshot: NetworkSnapshot) -> Verdict {
        let v4 = familyVerdict(.ipv4, in: snapshot)
        let v6 = familyVerdict(.ipv6, in: snapshot)
        let chosen: (IPAddress.Family, FamilyVerdict)
        if v6.reachable {
            chosen = (.ipv6, v6)
        } else if v4.reachable {
            chosen = (.ipv4, v4)
        } else if v4.flags.contains(.connectionRequired) || !v6.flags.contains(.connectionRequired) {
            chosen = (.ipv4, v4)
        } else {
            chosen = (.ipv6, v6)
        }
        let family = chosen.1
        var verdict = Verdict(
            target: "internet",
            reachable: family.reachable,
            status: family.status,
            metered: family.metered,
            meteredReason: family.meteredReason,
            interface: family.interface,
            flags: family.flags,
            reason: family.reachable ? nil : family.reason,
            family: family.reachable ? chosen.0 : nil,
            ipv4: v4,
            ipv6: v6,
            reasonCode: family.reachable ? nil : family.reasonCode,
            meteredState: family.meteredState,
            meteredSource: family.meteredSource
        )
        verdict.captivePortal = family.reachable ? family.interface.flatMap { CaptivePortal.announced(onInterface: $0, in: snapshot) } : nil
        verdict.budget = family.reachable ? family.interface.flatMap { snapshot.budgets[$0] } : nil
        verdict.roamingSource = family.reachable ? family.interface.flatMap { snapshot.roaming[$0] } : nil
        verdict.wifiNetwork = family.reachable ? family.interface.flatMap { snapshot.wifi[$0]?.identity } : nil
        return verdict
    }

    /// The verdict for one family's default route.
    public func familyVerdict(_ family: IPAddress.Family, in snapshot: NetworkSnapshot) -> FamilyVerdict {
        let defaults = snapshot.defaultRoutes
            .enumerated()
            .filter { $0.element.family == family && $0.element.table == Route.mainTable && $0.element.isDefault }
            .sorted { ($0.element.metric, $0.offset) < ($1.element.metric, $1.offset) }
            .map(\.element)
        let familyName = family == .ipv4 ? "IPv4" : "IPv6"
        var skipped: [String] = []
        for route in defaults {
            if route.type.rejects {
                return .unreachable(.rejectingRoute, "\(familyName) default route is \(route.type)")
            }
            guard route.type == .unicast else { continue }
            for hop in route.nexthops {
                guard let link = snapshot.links[hop.interfaceIndex] else { continue }
                let linkClass = classifier.classify(link, in: snapshot)
                if linkClass.ignored { continue }
                // The kernel marks next hops over a device that is down dead and flushes them.
                if !link.flags.contains(.up) {
                    skipped.append("\(link.name) is down")
                    continue
                }
                if !link.hasCarrier, snapshot.linkdownPolicy.ignoresLinkdown(family: family, interfaceIndex: link.index) {
                    skipped.append("no carrier on \(link.name)")
                    continue
                }
                return judge(route: route, hop: hop, link: link, linkClass: linkClass, family: family, in: snapshot)
            }
        }
        if !skipped.isEmpty {
            return .unreachable(.noRoute, "no usable \(familyName) default route (\(skipped.joined(separator: ", ")))")
        }
        return .unreachable(.noRoute, "no \(familyName) default route")
    }

    private func judge(
        route: Route, hop: Nexthop, link: LinkInfo, linkClass: InterfaceClass,
        family: IPAddress.Family, in snapshot: NetworkSnapshot
    ) -> FamilyVerdict {
        var flags: ReachabilityFlags = []
        if linkClass.transient { flags.insert(.transientConnection) }
        if let why = link.notOperationalReason {
            flags.insert(.connectionRequired)
            return .unreachable(.interfaceNotOperational, why, flags: flags, interface: link.name)
        }
        let familyName = family == .ipv4 ? "IPv4" : "IPv6"
        guard snapshot.addresses(of: link.index, family: family).contains(where: \.isUsableForInternet) else {
            flags.insert(.connectionRequired)
            return .unreachable(.noSourceAddress, "\(link.name) has no usable \(familyName) address", flags: flags, interface: link.name)
        }
        flags.insert(.reachable)
        if hop.gateway == nil { flags.insert(.isDirect) }
        if linkClass.kind == .wwan { flags.insert(.isWWAN) }
        return FamilyVerdict(
            reachable: true,
            status: ReachabilityStatus(kind: linkClass.kind),
            flags: flags,
            metered: linkClass.metered,
            meteredState: linkClass.meteredState,
            meteredSource: linkClass.meteredSource,
            meteredReason: linkClass.meteredReason,
            interface: link.name,
            kind: linkClass.kind,
            kindSource: linkClass.source,
            gateway: hop.gateway,
            metric: route.metric,
            reason: nil
        )
    }
}
