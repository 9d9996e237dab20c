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

    /// nil when no link went down or away.
    init?(from old: [Int32: LinkInfo], to new: [Int32: LinkInfo]) {
        for (index, link) in old {
            guard let now = new[index] else {
                goneLinks.insert(index)
                continue
            }
            if link.flags.contains(.up) && !now.flags.contains(.up) { down.insert(index) }
        }
        if down.isEmpty && goneLinks.isEmpty { return nil }
    }

    /// Both losses: the links of either.
    func merged(with other: LinkLoss?) -> LinkLoss {
        guard let other else { return self }
        var both = self
        both.down.formUnion(other.down)
        both.goneLinks.formUnion(other.goneLinks)
        return both
    }

    /// The default routes as the kernel leaves them: it removes each route whose every next hop goes through
    /// a lost link (a multipath route with a hop left keeps its dead hop; IPv6's removals come as messages
    /// too, maybe later than the link's).
    func survivors(of routes: [Route]) -> [Route] {
        routes.filter { route in
            route.nexthops.isEmpty
                || route.nexthops.contains { !down.contains($0.interfaceIndex) && !goneLinks.contains($0.interfaceIndex) }
        }
    }
}
