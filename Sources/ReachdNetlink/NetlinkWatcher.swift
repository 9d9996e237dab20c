import CNetlink
import Logging
import ReachdModel
import ReachdSystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Watches links, addresses, rules and netconf through libnl's cache manager, the default routes through a
/// `DefaultRouteTable`, and the fact that any other route changed through a `RouteChangeBell`, and reports
/// settled snapshots. No route but the default ones is kept: hosts ask the kernel (`RouteLookup`).
///
/// All libnl state belongs to one thread of the watcher's own (a `PollThread`), which sleeps in `poll(2)` on
/// the sockets and a wake-up pipe: no periodic wake-ups, nothing from libdispatch (whose worker pool would
/// add a 1 Hz monitor timer). After the sockets have been drained the snapshot is rebuilt from the caches
/// that changed, and the handler is called once if it differs from the last one: a burst of kernel messages
/// yields one snapshot. Other routes' changes bump `routeGeneration`, at once after a quiet spell and at
/// most once per `routeChangeIntervalNanoseconds` in a long stream (`ChangeCoalescer`). A receive error
/// (e.g. ENOBUFS after a socket overflow) replaces the cache manager, or the default route table, which
/// then dump afresh.
public final class NetlinkWatcher: @unchecked Sendable {
    enum CacheKind: String, CaseIterable {
        case link = "route/link"
        case address = "route/addr"
        case netconf = "route/netconf"
        case rule = "route/rule"
    }

    /// Other routes' changes (`routeGeneration`) are reported at once up to `routeChangeBurst` times in a
    /// row, then at most once per this interval (100 ms) while they keep coming: the longest a watched
    /// host's re-judging waits during a stream of route changes.
    public static let routeChangeIntervalNanoseconds: UInt64 = 100_000_000
    /// See `routeChangeIntervalNanoseconds`.
    public static let routeChangeBurst: UInt64 = 5

    /// How long to wait before retrying when the cache manager cannot be reopened.
    private static let reopenRetryMilliseconds: Int32 = 100

    /// Receive buffer of each event socket, in bytes (`SO_RCVBUFFORCE`, else `SO_RCVBUF`).
    private let receiveBufferSize: Int
    let sysfs: SysfsReader
    let logger: Logger

    // Touched by `start` and `stop` on the caller's thread, by the watcher thread in between.
    private var manager: OpaquePointer?
    private var eventSocket: OpaquePointer?
    var caches: [CacheKind: OpaquePointer] = [:]
    private var syncSocket: OpaquePointer?
    var routes: DefaultRouteTable?
    private var bell: RouteChangeBell?
    private var coalescer = ChangeCoalescer(
        intervalNanoseconds: NetlinkWatcher.routeChangeIntervalNanoseconds, burst: NetlinkWatcher.routeChangeBurst
    )
    // Read and written by the snapshot rebuild (NetlinkWatcher+Snapshot.swift).
    var dirty: Set<CacheKind> = []
    var routesDirty = false
    /// Links that went down or away in the last rebuild; `publishIfChanged` reads their routes again right after
    /// (the only rebuild that follows before it is its own, with no link change to see).
    var unreadLoss: LinkLoss?
    /// Links a message since the last rebuild said were down or deleted, even if a later one brought them back
    /// (a quick down and up in one batch: the kernel flushed their IPv4 routes all the same).
    var linksSeenDown: Set<Int32> = []
    /// The bell says routes other than the default ones changed: `routeGeneration` is to be bumped.
    var otherRoutesChanged = false
    var current = NetworkSnapshot()
    var sysfsFacts: [Int32: (name: String, facts: SysfsFacts)] = [:]
    var handler: (@Sendable (NetworkSnapshot) -> Void)?
    /// Resynchronisations so far (socket overflows, failed dumps), for the log and the metrics.
    let resynchronisations = Atomic<Int>(0)

    /// How often the caches were thrown away and dumped again.
    public var resynchronisationCount: Int { resynchronisations.load(ordering: .relaxed) }
    private var thread: PollThread?
    /// Set by `readAgain`, taken by the watcher thread.
    private let readAgainAsked = Atomic<Bool>(false)
    /// Told each deleted link's last counters (`onLinkDeleted`).
    private let linkDeletedHandler = Mutex<(@Sendable (CounterReading) -> Void)?>(nil)

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
        bell = try RouteChangeBell()
        try openManager()
        try openRoutes()
        dirty = Set(CacheKind.allCases)
        routesDirty = true
        rebuild()
        self.handler = handler
        handler(current)
        do {
            try thread.start(descriptors: { [unowned self] in self.descriptors() }, ready: { [unowned self] in self.ready($0) })
        } catch {
            throw NetlinkError(call: error.call, code: -error.errno.rawValue)
        }
        self.thread = thread
    }

    /// Throws the caches and the default routes away and dumps them again on the watcher's thread, then publishes
    /// what changed: after a resume from suspend, nothing the machine saw while asleep is taken on trust.
    public func readAgain() {
        readAgainAsked.store(true, ordering: .relaxed)
        thread?.wake()
    }

    /// Calls `handler` with the last byte counters of every link deleted from now on, on the watcher's thread, as the
    /// deletion is read and before any later message (a new link of the same name) is: each deletion once, in order.
    public func onLinkDeleted(_ handler: @escaping @Sendable (CounterReading) -> Void) {
        linkDeletedHandler.withLock { $0 = handler }
    }

    /// Stops watching; the handler is not called after this returns.
    public func stop() {
        guard let thread else { return }
        thread.stop()
        self.thread = nil
        handler = nil
        closeManager()
        routes = nil
        bell = nil
        if let syncSocket {
            nl_socket_free(syncSocket)
            self.syncSocket = nil
        }
    }

    /// What the watcher thread sleeps on: the manager's and the route table's sockets (or, while either is
    /// missing, a timeout to reopen it), and the bell's unless its coalescer is gathering (then its deadline).
    private func descriptors() -> (fds: [pollfd], timeout: Int32) {
        var fds: [pollfd] = []
        var timeout: Int32 = -1
        if let manager { fds.append(Self.readable(nl_cache_mngr_get_fd(manager))) }
        if let routes { fds.append(Self.readable(routes.fileDescriptor)) }
        if manager == nil || routes == nil { timeout = Self.reopenRetryMilliseconds }
        if let bell {
            if let wait = coalescer.millisecondsToDeadline(from: MonotonicClock.nanoseconds()) {
                timeout = timeout < 0 ? wait : min(timeout, wait)
            } else {
                fds.append(Self.readable(bell.fileDescriptor))
            }
        }
        return (fds, timeout)
    }

    private static func readable(_ fd: Int32) -> pollfd { pollfd(fd: fd, events: Int16(POLLIN), revents: 0) }

    /// The watcher thread woke up: a socket is readable, or a reopen or the coalescer's deadline is due.
    private func ready(_ outcome: PollThread.Outcome) {
        switch outcome {
        case .failed(let code):
            logger.error("netlink: poll failed: errno \(code)")
        case .ready(let entries):
            if readAgainAsked.exchange(false, ordering: .relaxed) {
                logger.info("netlink: reading links, addresses, rules, netconf and the default routes again")
                dumpCachesAgain()
                dumpRoutesAgain()
                return publishIfChanged()
            }
            let readable = Set(entries.filter { $0.revents != 0 }.map(\.fd))
            if let manager {
                if readable.contains(nl_cache_mngr_get_fd(manager)) { receiveManagerEvents() }
            } else {
                reopenManager()
            }
            if let routes {
                if readable.contains(routes.fileDescriptor) { receiveRouteEvents(routes) }
            } else {
                reopenRoutes()
            }
            if let bell { listen(to: bell, readable: readable.contains(bell.fileDescriptor)) }
            publishIfChanged()
        }
    }

    // MARK: - Cache manager

    private func openManager() throws {
        // Our own event socket, so that every message marks its cache dirty (see netlinkMessageCallback).
        guard let socket = nl_socket_alloc() else { throw NetlinkError(call: "nl_socket_alloc", code: NLE_NOMEM) }
        let context = Unmanaged.passUnretained(self).toOpaque()
        nl_socket_modify_cb(socket, NL_CB_MSG_IN, NL_CB_CUSTOM, netlinkMessageCallback, context)
        // One read per notification, not a peek for its size and then the read: notifications are a few KiB (a
        // larger one fails the read with NLE_MSG_TRUNC, and the caches are dumped again).
        nl_socket_disable_msg_peek(socket)
        _ = nl_socket_set_msg_buf_size(socket, 64 << 10)
        var mngr: OpaquePointer?
        var rc = nl_cache_mngr_alloc(socket, NETLINK_ROUTE, 0, &mngr)
        guard rc == 0, let mngr else {
            nl_socket_free(socket)
            throw NetlinkError(call: "nl_cache_mngr_alloc", code: rc)
        }
        NetlinkSocketOptions.enlargeReceiveBuffer(fd: nl_cache_mngr_get_fd(mngr), to: receiveBufferSize)
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
            do {
                syncSocket = try Self.openDumpSocket()
            } catch {
                nl_cache_mngr_free(mngr)
                nl_socket_free(socket)
                throw error
            }
        }
        manager = mngr
        eventSocket = socket
        caches = opened
    }

    /// A blocking socket for dumps: no ACKs, one large read at a time, and strict checking, so that the
    /// kernel filters a dump to one link (where it cannot, dumps stay right, only larger).
    static func openDumpSocket() throws(NetlinkError) -> OpaquePointer {
        guard let socket = nl_socket_alloc() else { throw NetlinkError(call: "nl_socket_alloc", code: NLE_NOMEM) }
        let rc = nl_connect(socket, NETLINK_ROUTE)
        guard rc == 0 else {
            nl_socket_free(socket)
            throw NetlinkError(call: "nl_connect", code: rc)
        }
        var strict: Int32 = 1
        _ = setsockopt(nl_socket_get_fd(socket), SOL_NETLINK, NETLINK_GET_STRICT_CHK, &strict, socklen_t(MemoryLayout<Int32>.size))
        nl_socket_disable_auto_ack(socket)
        nl_socket_disable_msg_peek(socket)
        _ = nl_socket_set_msg_buf_size(socket, 64 << 10)
        return socket
    }

    private func closeManager() {
        // The manager does not free a socket it was given.
        if let manager { nl_cache_mngr_free(manager) }
        if let eventSocket { nl_socket_free(eventSocket) }
        manager = nil
        eventSocket = nil
        caches = [:]
    }

    /// Called by libnl (on the watcher thread, inside `nl_cache_mngr_data_ready`) for every message received:
    /// marks its cache dirty, and notes a link that a message says is down or deleted (`linksSeenDown`).
    fileprivate func noteMessage(_ header: UnsafeMutablePointer<nlmsghdr>) {
        switch Int32(header.pointee.nlmsg_type) {
        case Int32(RTM_NEWLINK), Int32(RTM_DELLINK):
            dirty.insert(.link)
            noteLinkLoss(header)
        case Int32(RTM_NEWADDR), Int32(RTM_DELADDR): dirty.insert(.address)
        case Int32(RTM_NEWNETCONF), Int32(RTM_DELNETCONF): dirty.insert(.netconf)
        case Int32(RTM_NEWRULE), Int32(RTM_DELRULE): dirty.insert(.rule)
        default: break
        }
    }

    /// A link message (`ifinfomsg`, the link itself: `AF_UNSPEC`) that deletes the link or says it is down.
    private func noteLinkLoss(_ header: UnsafeMutablePointer<nlmsghdr>) {
        guard Int(nlmsg_datalen(header)) >= MemoryLayout<ifinfomsg>.size, let payload = nlmsg_data(header) else { return }
        let link = payload.loadUnaligned(as: ifinfomsg.self)
        let lost = Int32(header.pointee.nlmsg_type) == Int32(RTM_DELLINK) || link.ifi_flags & UInt32(IFF_UP.rawValue) == 0
        if link.ifi_family == UInt8(AF_UNSPEC), lost { linksSeenDown.insert(link.ifi_index) }
        if let reading = DeletedLinkCounters.reading(in: header), let handler = linkDeletedHandler.withLock({ $0 }) { handler(reading) }
    }

    /// Reads every message waiting on the manager's socket: libnl reads until the non-blocking socket is empty.
    private func receiveManagerEvents() {
        guard let manager else { return }
        let rc = nl_cache_mngr_data_ready(manager)
        if rc < 0 {
            resynchronise(after: NetlinkError(call: "nl_cache_mngr_data_ready", code: rc))
            return
        }
        logger.trace("netlink batch", metadata: ["messages": "\(rc)", "dirty": "\(dirty.map(\.rawValue).sorted())"])
    }

    /// Throws the caches away and dumps them again; the view is never left stale.
    private func resynchronise(after error: NetlinkError) {
        noteResynchronisation(after: error, of: "links, addresses, rules and netconf")
        dumpCachesAgain()
    }

    /// A fresh cache manager in place of the one open (`resynchronise`, `readAgain`).
    private func dumpCachesAgain() {
        closeManager()
        reopenManager()
    }

    /// Counts a resynchronisation (for the metrics) and logs what is read again, and why.
    private func noteResynchronisation(after error: NetlinkError, of what: String) {
        let count = resynchronisations.add(1, ordering: .relaxed).newValue
        logger.warning("netlink: \(error); resynchronising \(what)", metadata: ["resync": "\(count)"])
    }

    /// Opens a fresh cache manager; on failure the watcher thread calls again shortly.
    private func reopenManager() {
        do {
            try openManager()
        } catch {
            logger.error("netlink: cannot open the cache manager: \(error); retrying")
            return
        }
        dirty = Set(CacheKind.allCases)
    }

    // MARK: - Routes

    /// Subscribes a fresh default route table and fills it from a dump.
    private func openRoutes() throws {
        guard let syncSocket else { throw NetlinkError(call: "route dump", code: NLE_BAD_SOCK) }
        let table = try DefaultRouteTable(receiveBufferSize: receiveBufferSize)
        try table.refill(using: syncSocket)
        routes = table
        routesDirty = true
    }

    private func receiveRouteEvents(_ table: DefaultRouteTable) {
        do {
            if try table.receiveEvents() { routesDirty = true }
        } catch {
            dropRoutes(after: error)
        }
    }

    /// Forgets the default route table after an overflow or a failed dump; the watcher thread opens a fresh
    /// one at once (and retries shortly if that fails). The last default routes stay in the snapshot meanwhile.
    func dropRoutes(after error: NetlinkError) {
        noteResynchronisation(after: error, of: "the default routes")
        dumpRoutesAgain()
    }

    /// A fresh default route table in place of the one open (`dropRoutes`, `readAgain`).
    private func dumpRoutesAgain() {
        routes = nil
        reopenRoutes()
    }

    private func reopenRoutes() {
        do {
            try openRoutes()
        } catch {
            logger.error("netlink: cannot read the default routes: \(error); retrying")
        }
    }

    /// Reads the default routes again after links went down (those through them) or away (all of them;
    /// the kernel cannot filter a dump by a link that is gone).
    func refreshRoutes(after change: LinkLoss) {
        guard let routes, let syncSocket else { return }
        do {
            if change.gone {
                try routes.refill(using: syncSocket)
            } else {
                for index in change.down.sorted() { try routes.refresh(link: index, using: syncSocket) }
            }
            routesDirty = true
        } catch {
            dropRoutes(after: error)
        }
    }

    /// The bell rang while listening, or the coalescer's deadline passed: the next rebuild bumps
    /// `routeGeneration` when the coalescer says the changes are due.
    private func listen(to bell: RouteChangeBell, readable: Bool) {
        let now = MonotonicClock.nanoseconds()
        let due = coalescer.deadline.map { now >= $0 } ?? false
        guard readable || due else { return }
        if coalescer.observed(changes: bell.drain(), at: now) { otherRoutesChanged = true }
    }
}

/// Marks the message's cache dirty (and notes a lost link). libnl's change callbacks are not enough: they fire
/// only when libnl's object comparison sees a difference, and it ignores some (flag-only changes of a link, for one), which
/// left the view stale under rapid carrier flaps. The cache itself is always updated; we rebuild from it.
private let netlinkMessageCallback: nl_recvmsg_msg_cb_t = { message, context in
    guard let message, let context, let header = nlmsg_hdr(message) else { return Int32(NL_OK.rawValue) }
    Unmanaged<NetlinkWatcher>.fromOpaque(context).takeUnretainedValue().noteMessage(header)
    return Int32(NL_OK.rawValue)
}
