import CNetlink
import ReachdModel

/// Rebuilding the snapshot from the caches that changed.
extension NetlinkWatcher {
    func publishIfChanged() {
        let before = current
        rebuild()
        if current != before { handler?(current) }
    }

    func rebuild() {
        if dirty.contains(.link), let cache = caches[.link] {
            let links = LibnlObjects.objects(of: cache).compactMap(LibnlObjects.link).map(withSysfsFacts)
            let before = current.links
            current.links = Dictionary(links.map { ($0.index, $0) }, uniquingKeysWith: { _, new in new })
            sysfsFacts = sysfsFacts.filter { current.links[$0.key] != nil }
            if let loss = LinkLoss(from: before, to: current.links) { refreshRoutes(after: loss) }
        }
        if dirty.contains(.address), let cache = caches[.address] {
            current.addresses = LibnlObjects.objects(of: cache).compactMap(LibnlObjects.interfaceAddress)
        }
        if routesDirty, let routes {
            current.defaultRoutes = LibnlObjects.objects(of: routes.cache).compactMap(LibnlObjects.route)
            routesDirty = false
        }
        if dirty.contains(.netconf), let cache = caches[.netconf] {
            var policy = current.linkdownPolicy
            for object in LibnlObjects.objects(of: cache) {
                guard let (family, index, ignore) = LibnlObjects.linkdownSetting(object) else { continue }
                policy.ignore[family, default: [:]][index] = ignore
            }
            current.linkdownPolicy = policy
        }
        if dirty.contains(.rule) {
            current.ruleGeneration &+= 1
        }
        if otherRoutesChanged {
            current.routeGeneration &+= 1
            otherRoutesChanged = false
        }
        dirty = []
    }

    private func withSysfsFacts(_ link: LinkInfo) -> LinkInfo {
        var link = link
        if let known = sysfsFacts[link.index], known.name == link.name {
            link.sysfs = known.facts
        } else {
            link.sysfs = sysfs.facts(for: link.name)
            sysfsFacts[link.index] = (link.name, link.sysfs)
        }
        return link
    }

}

/// Links that went down or away between two snapshots. The kernel flushes the IPv4 routes through such a
/// link without a netlink message, so the default routes through it must be read again. (A link that
/// comes up or appears brings no silent change.)
struct LinkLoss: Equatable {
    /// Links that were up and are down now.
    var down: Set<Int32> = []
    /// Whether any link is gone.
    var gone = false

    /// nil when no link went down or away.
    init?(from old: [Int32: LinkInfo], to new: [Int32: LinkInfo]) {
        for (index, link) in old {
            guard let now = new[index] else {
                gone = true
                continue
            }
            if link.flags.contains(.up) && !now.flags.contains(.up) { down.insert(index) }
        }
        if down.isEmpty && !gone { return nil }
    }
}
