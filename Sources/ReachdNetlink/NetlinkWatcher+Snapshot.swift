import CNetlink
import ReachdModel

/// Rebuilding the snapshot from the caches that changed.
extension NetlinkWatcher {
    /// Publishes the rebuilt snapshot if it changed. Where links went down or away, their default routes are
    /// read again only after that, off the change's path: the snapshot went out without the routes the kernel
    /// removes (`LinkLoss.survivors`), and a second one follows only if the kernel's differ.
    func publishIfChanged() {
        let before = current
        rebuild()
        if current != before { handler?(current) }
        guard let loss = unreadLoss else { return }
        unreadLoss = nil
        refreshRoutes(after: loss)
        let published = current
        rebuild()
        if current != published { handler?(current) }
    }

    func rebuild() {
        if dirty.contains(.link), let cache = caches[.link] {
            let before = current.links
            var links: [Int32: LinkInfo] = [:]
            links.reserveCapacity(before.count)
            for object in LibnlObjects.objects(of: cache) {
                if let link = LibnlObjects.link(object) { links[link.index] = withSysfsFacts(link) }
            }
            current.links = links
            if sysfsFacts.keys.contains(where: { current.links[$0] == nil }) {
                sysfsFacts = sysfsFacts.filter { current.links[$0.key] != nil }
            }
            unreadLoss = LinkLoss(from: before, to: current.links, seenDown: linksSeenDown)
            linksSeenDown.removeAll(keepingCapacity: true)
        }
        if dirty.contains(.address), let cache = caches[.address] {
            current.addresses = LibnlObjects.objects(of: cache).compactMap(LibnlObjects.interfaceAddress)
        }
        if routesDirty, let routes {
            current.defaultRoutes = LibnlObjects.objects(of: routes.cache).compactMap(LibnlObjects.route)
            routesDirty = false
        }
        if let unreadLoss { current.defaultRoutes = unreadLoss.survivors(of: current.defaultRoutes, links: current.links) }
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
            // A failed dump keeps the ranges known: the next rule change reads them again.
            if let rules = UIDRuleDump.ranges() { current.uidRules = rules }
        }
        if otherRoutesChanged {
            current.routeGeneration &+= 1
            otherRoutesChanged = false
        }
        dirty.removeAll(keepingCapacity: true)
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
