import CNetlink
import Dispatch
import Logging
import ReachdModel
#if canImport(Glibc)
import Glibc
#endif

/// Watches links, addresses, routes and netconf through libnl's cache manager and reports settled snapshots.
///
/// All libnl state is confined to one serial dispatch queue; the cache manager's socket is watched with a
/// dispatch read source (no polling, no timers). After the socket has been drained the snapshot is rebuilt
/// from the caches that changed, and the handler is called once if it differs from the last one: a burst
/// of kernel messages yields one snapshot. A receive error (e.g. ENOBUFS after a socket overflow) replaces
/// the cache manager, which dumps everything afresh.
public final class NetlinkWatcher: @unchecked Sendable {
    /// Settings that tests and stress runs change.
    public struct Options: Sendable {
        /// Where sysfs is mounted (a fake tree in tests).
        public var sysfsRoot: String
        /// Receive buffer of the event socket, in bytes (`SO_RCVBUFFORCE`, else `SO_RCVBUF`).
        public var receiveBufferSize: Int

        public init(sysfsRoot: String = "/sys", receiveBufferSize: Int = 4 << 20) {
            self.sysfsRoot = sysfsRoot
            self.receiveBufferSize = receiveBufferSize
        }
    }

    private enum CacheKind: String, CaseIterable {
        case link = "route/link"
        case address = "route/addr"
        case route = "route/route"
        case netconf = "route/netconf"
    }

    private let queue = DispatchQueue(label: "reachd.netlink")
    private let options: Options
    private let sysfs: SysfsReader
    private let logger: Logger

    // Everything below is touched only on `queue`.
    private var manager: OpaquePointer?
    private var caches: [CacheKind: OpaquePointer] = [:]
    private var syncSocket: OpaquePointer?
    private var source: DispatchSourceRead?
    private var dirty: Set<CacheKind> = []
    private var current = NetworkSnapshot()
    private var sysfsFacts: [Int32: (name: String, facts: SysfsFacts)] = [:]
    private var handler: (@Sendable (NetworkSnapshot) -> Void)?
    private var resynchronisations = 0

    public init(options: Options = Options(), logger: Logger) {
        self.options = options
        self.sysfs = SysfsReader(root: options.sysfsRoot)
        self.logger = logger
    }

    deinit {
        source?.cancel()
        if let manager { nl_cache_mngr_free(manager) }
        if let syncSocket { nl_socket_free(syncSocket) }
    }

    /// Opens the caches, returns the initial snapshot, then calls `handler` on every settled change.
    public func start(handler: @escaping @Sendable (NetworkSnapshot) -> Void) throws -> NetworkSnapshot {
        try queue.sync {
            precondition(self.manager == nil, "NetlinkWatcher started twice")
            try self.openManager()
            self.dirty = Set(CacheKind.allCases)
            self.rebuild()
            self.handler = handler
            return self.current
        }
    }

    /// Stops watching; the handler is not called after this returns.
    public func stop() {
        queue.sync {
            self.handler = nil
            self.closeManager()
            if let syncSocket = self.syncSocket {
                nl_socket_free(syncSocket)
                self.syncSocket = nil
            }
        }
    }

    /// The latest snapshot.
    public var snapshot: NetworkSnapshot { queue.sync { current } }

    /// How often the watcher had to throw its caches away and dump afresh.
    public var resynchronisationCount: Int { queue.sync { resynchronisations } }

    // MARK: - Cache manager

    private func openManager() throws {
        var mngr: OpaquePointer?
        var rc = nl_cache_mngr_alloc(nil, NETLINK_ROUTE, 0, &mngr)
        guard rc == 0, let mngr else { throw NetlinkError(call: "nl_cache_mngr_alloc", code: rc) }
        enlargeReceiveBuffer(fd: nl_cache_mngr_get_fd(mngr))
        let context = Unmanaged.passUnretained(self).toOpaque()
        var opened: [CacheKind: OpaquePointer] = [:]
        for kind in CacheKind.allCases {
            var cache: OpaquePointer?
            rc = nl_cache_mngr_add(mngr, kind.rawValue, netlinkChangeCallback, context, &cache)
            guard rc == 0, let cache else {
                nl_cache_mngr_free(mngr)
                throw NetlinkError(call: "nl_cache_mngr_add(\(kind.rawValue))", code: rc)
            }
            opened[kind] = cache
        }
        if syncSocket == nil {
            guard let socket = nl_socket_alloc() else { throw NetlinkError(call: "nl_socket_alloc", code: NLE_NOMEM) }
            rc = nl_connect(socket, NETLINK_ROUTE)
            guard rc == 0 else {
                nl_socket_free(socket)
                nl_cache_mngr_free(mngr)
                throw NetlinkError(call: "nl_connect", code: rc)
            }
            syncSocket = socket
        }
        manager = mngr
        caches = opened
        let readSource = DispatchSource.makeReadSource(fileDescriptor: nl_cache_mngr_get_fd(mngr), queue: queue)
        readSource.setEventHandler { [unowned self] in self.socketReadable() }
        // The manager (and its socket) may only be freed once the source no longer watches the fd.
        nonisolated(unsafe) let owned = mngr
        readSource.setCancelHandler { nl_cache_mngr_free(owned) }
        source = readSource
        readSource.resume()
    }

    private func closeManager() {
        source?.cancel()
        source = nil
        manager = nil
        caches = [:]
    }

    private func enlargeReceiveBuffer(fd: Int32) {
        var size = Int32(clamping: options.receiveBufferSize)
        let length = socklen_t(MemoryLayout<Int32>.size)
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, length) != 0 {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, length)
        }
    }

    /// Called by libnl (on `queue`, inside `nl_cache_mngr_data_ready`) for every changed object.
    fileprivate func noteChange(in cache: OpaquePointer) {
        if let kind = caches.first(where: { $0.value == cache })?.key {
            dirty.insert(kind)
        }
    }

    private func socketReadable() {
        guard let manager else { return }
        var rounds = 0
        repeat {
            let rc = nl_cache_mngr_data_ready(manager)
            if rc < 0 {
                resynchronise(after: NetlinkError(call: "nl_cache_mngr_data_ready", code: rc))
                return
            }
            rounds += 1
        } while rounds < 64 && socketHasPendingData(nl_cache_mngr_get_fd(manager))
        publishIfChanged()
    }

    private func socketHasPendingData(_ fd: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0 && entry.revents & Int16(POLLIN) != 0
    }

    /// Throws the caches away and dumps everything again; the view is never left stale.
    private func resynchronise(after error: NetlinkError) {
        resynchronisations += 1
        logger.warning("netlink: \(error); resynchronising all caches", metadata: ["resync": "\(resynchronisations)"])
        closeManager()
        do {
            try openManager()
        } catch {
            // Without a working socket the view would go stale: say so loudly and retry on the next turn.
            logger.error("netlink: cannot reopen the cache manager: \(error); retrying")
            queue.asyncAfter(deadline: .now() + .milliseconds(100)) { [weak self] in
                guard let self, self.handler != nil, self.manager == nil else { return }
                self.resynchronise(after: NetlinkError(call: "retry", code: 0))
            }
            return
        }
        dirty = Set(CacheKind.allCases)
        publishIfChanged()
    }

    // MARK: - Snapshot

    private func publishIfChanged() {
        let before = current
        rebuild()
        if current != before { handler?(current) }
    }

    private func rebuild() {
        guard !dirty.isEmpty else { return }
        if dirty.contains(.link), let cache = caches[.link] {
            let links = LibnlObjects.objects(of: cache).compactMap(LibnlObjects.link).map(withSysfsFacts)
            let before = current.links
            current.links = Dictionary(links.map { ($0.index, $0) }, uniquingKeysWith: { _, new in new })
            sysfsFacts = sysfsFacts.filter { current.links[$0.key] != nil }
            if adminStateChanged(from: before, to: current.links) { refillRoutes() }
        }
        if dirty.contains(.address), let cache = caches[.address] {
            current.addresses = LibnlObjects.objects(of: cache).compactMap(LibnlObjects.interfaceAddress)
        }
        if dirty.contains(.route), let cache = caches[.route] {
            current.routes = LibnlObjects.objects(of: cache).compactMap(LibnlObjects.route)
        }
        if dirty.contains(.netconf), let cache = caches[.netconf] {
            var policy = current.linkdownPolicy
            for object in LibnlObjects.objects(of: cache) {
                guard let (family, index, ignore) = LibnlObjects.linkdownSetting(object) else { continue }
                policy.ignore[family, default: [:]][index] = ignore
            }
            current.linkdownPolicy = policy
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

    /// IPv4 routes through a device that goes down are flushed without a netlink message, so a change of
    /// the links or of their administrative state means the route cache must be dumped again.
    private func adminStateChanged(from old: [Int32: LinkInfo], to new: [Int32: LinkInfo]) -> Bool {
        guard Set(old.keys) == Set(new.keys) else { return true }
        return new.contains { index, link in old[index]?.flags.contains(.up) != link.flags.contains(.up) }
    }

    private func refillRoutes() {
        guard let syncSocket, let cache = caches[.route] else { return }
        let rc = nl_cache_refill(syncSocket, cache)
        if rc < 0 {
            logger.warning("netlink: \(NetlinkError(call: "nl_cache_refill(route/route)", code: rc)); resynchronising")
            dirty.insert(.route)
            queue.async { [weak self] in
                self?.resynchronise(after: NetlinkError(call: "nl_cache_refill", code: rc))
            }
            return
        }
        dirty.insert(.route)
    }
}

/// libnl's change callback: marks the cache dirty; the snapshot is rebuilt once the socket is drained.
private let netlinkChangeCallback: change_func_t = { cache, _, _, context in
    guard let cache, let context else { return }
    Unmanaged<NetlinkWatcher>.fromOpaque(context).takeUnretainedValue().noteChange(in: cache)
}
