import ReachdModel

/// Links that went down or away between two snapshots. The kernel removes the routes through such a link,
/// the IPv4 ones without a netlink message, so the default routes through it must be read again. (A link
/// that comes up or appears brings no silent change.)
struct LinkLoss: Equatable {
    /// Links that were up and are down now.
    var down: Set<Int32> = []
    /// Links that are gone.
    var goneLinks: Set<Int32> = []

    /// Whether any link is gone (a dump cannot be filtered by a link that no longer exists).
    var gone: Bool { !goneLinks.isEmpty }

    /// nil when no link went down or away. `seenDown`: links the messages in between said were down, even if
    /// they are up again now.
    init?(from old: [Int32: LinkInfo], to new: [Int32: LinkInfo], seenDown: Set<Int32> = []) {
        for (index, link) in old {
            guard let now = new[index] else {
                goneLinks.insert(index)
                continue
            }
            if link.flags.contains(.up) && (!now.flags.contains(.up) || seenDown.contains(index)) { down.insert(index) }
        }
        if down.isEmpty && goneLinks.isEmpty { return nil }
    }

    /// The default routes as the kernel leaves them after the loss, given the links now (`links`); only routes
    /// with a next hop through a lost link change. A hop through a lost link, or a link that is down or absent,
    /// is dead (a link that went down and came back lost its routes when it went down). Where the kernel does
    /// more (IPv6 hops on a link without carrier, IPv4 hops on a link that lost its last address, nexthop
    /// groups), the routes read again after the snapshot correct it.
    /// - IPv4 (`fib_sync_down_dev`): a route with a hop through a deleted link goes; otherwise a route goes
    ///   when all its hops are dead. Without a message.
    /// - IPv6 (`fib6_ifdown`): each hop is a route of its own: a hop through a deleted link goes; a route goes
    ///   when all its hops are dead. With messages, which may come later than the link's.
    func survivors(of routes: [Route], links: [Int32: LinkInfo]) -> [Route] {
        let isDead = { (hop: Nexthop) in
            down.contains(hop.interfaceIndex) || (links[hop.interfaceIndex].map { !$0.flags.contains(.up) } ?? true)
        }
        return routes.compactMap { route in
            guard route.nexthops.contains(where: { down.contains($0.interfaceIndex) || goneLinks.contains($0.interfaceIndex) }) else {
                return route
            }
            var kept = route
            let throughGone = route.nexthops.contains { goneLinks.contains($0.interfaceIndex) }
            switch route.family {
            case .ipv4 where throughGone: return nil
            case .ipv4: break
            case .ipv6: kept.nexthops.removeAll { goneLinks.contains($0.interfaceIndex) }
            }
            return kept.nexthops.isEmpty || kept.nexthops.allSatisfy(isDead) ? nil : kept
        }
    }
}
