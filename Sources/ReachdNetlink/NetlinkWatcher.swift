import CNetlink
import Logging
import ReachdModel
import ReachdServiceKit
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Watches links, addresses, routes and netconf through libnl's cache manager and reports settled snapshots.
///
/// All libnl state belongs to one thread of the watcher's own (a `PollThread`), which sleeps in `poll(2)` on
/// the cache manager's socket and a wake-up pipe: no timers, no periodic wake-ups, nothing from libdispatch (whose
/// worker pool would add a 1 Hz monitor timer). After the socket has been drained the snapshot is rebuilt
/// from the caches that changed, and the handler is called once if it differs from the last one: a burst
/// of kernel messages yields one snapshot. A receive error (e.g. ENOBUFS after a socket overflow) replaces
/// the cache manager, which dumps everything afresh.
public final class NetlinkWatcher: @unchecked Sendable {
    private enum CacheKind: String, CaseIterable {
        case link = "route/link"
        case address = "route/addr"
        case route = "route/route"
        case netconf = "route/netconf"
        case rule = "route/rule"
    }

    /// How long to wait before retrying when the cache manager cannot be reopened.
    private static let reopenRetryMilliseconds: Int32 = 100

    /// Receive buffer of the event socket, in bytes (`SO_RCVBUFFORCE`, else `SO_RCVBUF`).
    private let receiveBufferSize: Int
    private let sysfs: SysfsReader
    private let logger: Logger

    // Touched by `start` and `stop` on the caller's thread, by the watcher thread in between.
    private var manager: OpaquePointer?
    private var eventSocket: OpaquePointer?
    private var caches: [CacheKind: OpaquePointer] = [:]
    private var syncSocket: OpaquePointer?
    private var dirty: Set<CacheKind> = []
    private var current = NetworkSnapshot()
    private var sysfsFacts: [Int32: (name: String, facts: SysfsFacts)] = [:]
    private var handler: (@Sendable (NetworkSnapshot) -> Void)?
    /// Resynchronisations so far (socket overflows, failed dumps), for the log and the metrics.
    private let resynchronisations = Atomic<Int>(0)

    /// How often the caches were thrown away and dumped again.
    public var resynchronisationCount: Int { resynchronisations.load(ordering: .relaxed) }
    private var thread: PollThread?

    /// `sysfsRoot`: where sysfs is mounted (a fake tree in tests).
    public init(sysfsRoot: String = "/sys", receiveBufferSize: Int = 4 << 20, logger: Logger) {
        self.receiveBufferSize = receiveBufferSize
        self.sysfs = SysfsReader(root: sysfsRoot)
        self.logger = logger
    }

    deinit {
        stop()
    }

    /// Opens the caches and calls `handler` with the initial snapshot (on the calling thread, before this
    /// returns), then with every settled change (on the watcher's thread), always in order. The netlink
    /// sockets belong to the calling thread's network namespace.
    public func start(handler: @escaping @Sendable (NetworkSnapshot) -> Void) throws {
        precondition(thread == nil, "NetlinkWatcher started twice")
        let thread: PollThread
        do {
            thread = try PollThread()
        } catch {
            throw NetlinkError(call: error.call, code: NLE_FAILURE)
        }
        try openManager()
        dirty = Set(CacheKind.allCases)
        rebuild()
        self.handler = handler
        handler(current)
        do {
            try thread.start(descriptors: { [unowned self] in self.descriptors() }, ready: { [unowned self] in self.ready($0) })
        } catch {
            throw NetlinkError(call: error.call, code: -error.code)
        }
        self.thread = thread
    }

    /// Stops watching; the handler is not called after this returns.
    public func stop() {
        guard let thread else { return }
        thread.stop()
        self.thread = nil
        handler = nil
        closeManager()
        if let syncSocket {
            nl_socket_free(syncSocket)
            self.syncSocket = nil
        }
    }

    /// What the watcher thread sleeps on: the cache manager's socket, or (without a manager) a timeout to reopen it.
    private func descriptors() -> (fds: [pollfd], timeout: Int32) {
        guard let manager else { return ([], Self.reopenRetryMilliseconds) }
        return ([pollfd(fd: nl_cache_mngr_get_fd(manager), events: Int16(POLLIN), revents: 0)], -1)
    }

    /// The watcher thread woke up: the kernel has something to say, or it is time to reopen the cache manager.
    private func ready(_ outcome: PollThread.Outcome) {
        switch outcome {
        case .failed(let code):
            logger.error("netlink: poll failed: errno \(code)")
        case .ready(let entries):
            if manager == nil {
                reopen()
            } else if let socket = entries.first, socket.revents != 0 {
                socketReadable()
            }
        }
    }

    // MARK: - Cache manager

    private func openManager() throws {
        // Our own event socket, so that every message marks its cache dirty (see netlinkMessageCallback).
        guard let socket = nl_socket_alloc() else { throw NetlinkError(call: "nl_socket_alloc", code: NLE_NOMEM) }
        let context = Unmanaged.passUnretained(self).toOpaque()
        nl_socket_modify_cb(socket, NL_CB_MSG_IN, NL_CB_CUSTOM, netlinkMessageCallback, context)
        var mngr: OpaquePointer?
        var rc = nl_cache_mngr_alloc(socket, NETLINK_ROUTE, 0, &mngr)
        guard rc == 0, let mngr else {
            nl_socket_free(socket)
            throw NetlinkError(call: "nl_cache_mngr_alloc", code: rc)
        }
        enlargeReceiveBuffer(fd: nl_cache_mngr_get_fd(mngr))
        var opened: [CacheKind: OpaquePointer] = [:]
        for kind in CacheKind.allCases {
            var cache: OpaquePointer?
            rc = nl_cache_mngr_add(mngr, kind.rawValue, nil, nil, &cache)
            guard rc == 0, let cache else {
                nl_cache_mngr_free(mngr)
                nl_socket_free(socket)
                throw NetlinkError(call: "nl_cache_mngr_add(\(kind.rawValue))", code: rc)
            }
            opened[kind] = cache
        }
        if syncSocket == nil {
            guard let sync = nl_socket_alloc() else { throw NetlinkError(call: "nl_socket_alloc", code: NLE_NOMEM) }
            rc = nl_connect(sync, NETLINK_ROUTE)
            guard rc == 0 else {
                nl_socket_free(sync)
                nl_cache_mngr_free(mngr)
                nl_socket_free(socket)
                throw NetlinkError(call: "nl_connect", code: rc)
            }
            syncSocket = sync
        }
        manager = mngr
        eventSocket = socket
        caches = opened
    }

    private func closeManager() {
        // The manager does not free a socket it was given.
        if let manager { nl_cache_mngr_free(manager) }
        if let eventSocket { nl_socket_free(eventSocket) }
        manager = nil
        eventSocket = nil
        caches = [:]
    }

    private func enlargeReceiveBuffer(fd: Int32) {
        var size = Int32(clamping: receiveBufferSize)
        let length = socklen_t(MemoryLayout<Int32>.size)
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, length) != 0 {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, length)
        }
    }

    /// Called by libnl (on the watcher thread, inside `nl_cache_mngr_data_ready`) for every message received.
    fileprivate func noteMessage(type: UInt16) {
        switch Int32(type) {
        case Int32(RTM_NEWLINK), Int32(RTM_DELLINK): dirty.insert(.link)
        case Int32(RTM_NEWADDR), Int32(RTM_DELADDR): dirty.insert(.address)
        case Int32(RTM_NEWROUTE), Int32(RTM_DELROUTE): dirty.insert(.route)
        case Int32(RTM_NEWNETCONF), Int32(RTM_DELNETCONF): dirty.insert(.netconf)
        case Int32(RTM_NEWRULE), Int32(RTM_DELRULE): dirty.insert(.rule)
        default: break
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
        logger.trace("netlink batch", metadata: ["rounds": "\(rounds)", "dirty": "\(dirty.map(\.rawValue).sorted())"])
        publishIfChanged()
    }

    private func socketHasPendingData(_ fd: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0 && entry.revents & Int16(POLLIN) != 0
    }

    /// Throws the caches away and dumps everything again; the view is never left stale.
    private func resynchronise(after error: NetlinkError) {
        let count = resynchronisations.add(1, ordering: .relaxed).newValue
        logger.warning("netlink: \(error); resynchronising all caches", metadata: ["resync": "\(count)"])
        closeManager()
        reopen()
    }

    /// Opens a fresh cache manager and publishes what it dumped; on failure `run` calls again shortly.
    private func reopen() {
        do {
            try openManager()
        } catch {
            logger.error("netlink: cannot open the cache manager: \(error); retrying")
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
        if dirty.contains(.rule) {
            current.ruleGeneration &+= 1
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
            // A failed dump leaves the route cache unknown: start over with a fresh manager.
            resynchronisations.add(1, ordering: .relaxed)
            logger.warning("netlink: \(NetlinkError(call: "nl_cache_refill(route/route)", code: rc)); resynchronising")
            closeManager()
            return
        }
        dirty.insert(.route)
    }
}

/// Marks the message's cache dirty. libnl's change callbacks are not enough: they fire only when libnl's
/// object comparison sees a difference, and it ignores some (flag-only changes of a link, for one), which
/// left the view stale under rapid carrier flaps. The cache itself is always updated; we rebuild from it.
private let netlinkMessageCallback: nl_recvmsg_msg_cb_t = { message, context in
    guard let message, let context, let header = nlmsg_hdr(message) else { return Int32(NL_OK.rawValue) }
    Unmanaged<NetlinkWatcher>.fromOpaque(context).takeUnretainedValue().noteMessage(type: header.pointee.nlmsg_type)
    return Int32(NL_OK.rawValue)
}
