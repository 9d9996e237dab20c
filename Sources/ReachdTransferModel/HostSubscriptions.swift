/// Which of the transfer service's connections to reachd each watched host is subscribed on, and what to
/// do next. reachd takes at most `perConnection` host subscriptions on one connection and has no
/// unsubscribe: a host nobody watches any more keeps its slot until its connection closes.
///
/// New hosts are subscribed incrementally, `batch` at a time, on a connection with room; when none has
/// room, a connection at least half of whose slots are stale is replaced (its watched hosts and the new
/// ones subscribed on a fresh connection, then the old one closed), else another is opened; a connection
/// that holds no watched host is closed (one always stays). So a host is subscribed again only when its
/// connection is replaced, and there are at most about twice `ceil(watched / perConnection)` connections.
/// One step is under way at a time: the caller asks `next()`, does it, and reports `finished`. Refused hosts wait
/// for one retry timer (at most one pending): `finished` says when to start it, and the caller calls
/// `retryRefused()` when it fires.
public struct HostSubscriptions: Sendable {
    public enum Action: Hashable, Sendable {
        /// Subscribe `hosts` on the open `connection`.
        case subscribe
        /// Open `connection` and subscribe `hosts` on it; then close `replacing`, if any.
        case open(replacing: Int?)
        /// Close `connection`: no watched host needs it.
        case close
    }

    /// What the caller does once a step finished.
    public enum FollowUp: Hashable, Sendable {
        /// Nothing.
        case none
        /// Call `retryRefused()` after `delay`: this step's hosts were refused and no retry was pending.
        case retryRefused(after: Duration)
    }

    public struct Step: Hashable, Sendable {
        public var action: Action
        public var connection: Int
        public var hosts: [String]
        /// Steps planned before the last `reset()` are stale: their outcome is ignored.
        var epoch: Int
    }

    public let perConnection: Int
    public let batch: Int
    private var watchers: [String: Int] = [:]
    /// Per open connection (or one being opened), the hosts subscribed on it, watched or not.
    private var connections: [Int: Set<String>] = [:]
    /// The connection each subscribed host is on (for a host being moved, the one it is still on).
    private var home: [String: Int] = [:]
    /// Watched hosts on no connection, in the order they came (may hold hosts since unwatched or placed).
    private var queue: [String] = []
    /// Watched hosts reachd refused, with its answer; queued again by `retryRefused()`.
    public private(set) var refused: [String: String] = [:]
    /// A `retryRefused()` is due (asked for by `finished`, not called yet); a reset does not end it.
    public private(set) var refusedRetryPending = false
    private var nextConnection = 0
    private var epoch = 0

    /// How long refused hosts wait before they are asked for again.
    public static let refusedRetry = Duration.seconds(5)

    public init(perConnection: Int = 4096, batch: Int = 1024) {
        self.perConnection = perConnection
        self.batch = batch
    }

    public var connectionCount: Int { connections.count }
    public var watchedCount: Int { watchers.count }
    /// Hosts this value knows (watched, or holding a slot): never more than the watched ones plus the slots.
    public var knownCount: Int { Set(watchers.keys).union(home.keys).count }

    public var watchedHosts: [String] { Array(watchers.keys) }

    public func isWatched(_ host: String) -> Bool { watchers[host] != nil }

    /// Whether `host` is subscribed on a connection (reachd has no unsubscribe: also after its last watch ended).
    public func isSubscribed(_ host: String) -> Bool { home[host] != nil }

    /// Whether `connection` is open or being opened (not closed, nor planned before the last reset).
    public func isOpen(_ connection: Int) -> Bool { connections[connection] != nil }

    /// The hosts subscribed on `connection`.
    public func hosts(on connection: Int) -> Set<String> { connections[connection] ?? [] }

    /// One caller's watch of `hosts` (counted).
    public mutating func watch(_ hosts: [String]) {
        for host in hosts {
            watchers[host, default: 0] += 1
            if watchers[host] == 1, home[host] == nil { queue.append(host) }
        }
    }

    /// Ends one caller's watch of `hosts`; returns those nobody watches any more.
    public mutating func unwatch(_ hosts: [String]) -> [String] {
        var ended: [String] = []
        for host in hosts {
            guard let count = watchers[host] else { continue }
            guard count == 1 else {
                watchers[host] = count - 1
                continue
            }
            watchers[host] = nil
            refused[host] = nil
            ended.append(host)
        }
        return ended
    }

    /// An id for a connection opened outside a step (the first, after connecting): `opened` once it is.
    public mutating func reserve() -> Int {
        defer { nextConnection += 1 }
        return nextConnection
    }

    /// The reserved connection is open, with no subscription yet.
    public mutating func opened(_ connection: Int) {
        connections[connection] = []
    }

    /// Every connection is gone: every watched host waits for the next one.
    public mutating func reset() {
        epoch += 1
        connections = [:]
        home = [:]
        refused = [:]
        queue = watchers.keys.sorted()
    }

    /// The retry `finished` asked for is due (or the caller retries at once): queues the refused hosts again; the
    /// next refusal asks for another retry.
    public mutating func retryRefused() {
        refusedRetryPending = false
        queue += refused.keys.sorted()
        refused = [:]
    }

    /// The next step, recorded as under way; nil when every watched host is placed (or refused), or there
    /// is no connection.
    public mutating func next() -> Step? {
        guard !connections.isEmpty else { return nil }
        let live = liveCounts()
        if connections.count > 1, let idle = connections.keys.sorted().first(where: { live[$0, default: 0] == 0 }) {
            drop(idle)
            return Step(action: .close, connection: idle, hosts: [], epoch: epoch)
        }
        var seen = Set<String>()
        queue = queue.filter { watchers[$0] != nil && home[$0] == nil && refused[$0] == nil && seen.insert($0).inserted }
        guard !queue.isEmpty else { return nil }
        if let (id, slots) = connections.sorted(by: { $0.key < $1.key }).first(where: { $0.value.count < perConnection }) {
            return Step(action: .subscribe, connection: id, hosts: take(min(batch, perConnection - slots.count), to: id), epoch: epoch)
        }
        let id = nextConnection
        nextConnection += 1
        let stale = connections.map { (id: $0.key, count: $0.value.count - live[$0.key, default: 0]) }
        if let old = stale.max(by: { ($0.count, $1.id) < ($1.count, $0.id) }), old.count >= perConnection / 2 {
            let kept = hosts(on: old.id).filter { watchers[$0] != nil }.sorted()
            connections[id] = Set(kept)
            let planned = kept + take(min(batch, perConnection - kept.count), to: id)
            return Step(action: .open(replacing: old.id), connection: id, hosts: planned, epoch: epoch)
        }
        connections[id] = []
        return Step(action: .open(replacing: nil), connection: id, hosts: take(batch, to: id), epoch: epoch)
    }

    /// How `step` went: nil when reachd took it, else its refusal (or why the connection could not be opened). Its
    /// hosts refused now stand in `refused`; the first refusal while no retry is pending asks for one.
    public mutating func finished(_ step: Step, refusal: String?) -> FollowUp {
        record(step, refusal: refusal)
        guard !refusedRetryPending, step.hosts.contains(where: { refused[$0] != nil }) else { return .none }
        refusedRetryPending = true
        return .retryRefused(after: Self.refusedRetry)
    }

    private mutating func record(_ step: Step, refusal: String?) {
        guard step.epoch == epoch, step.action != .close else { return }
        if let refusal {
            for host in step.hosts where home[host] == step.connection {
                home[host] = nil
                if watchers[host] != nil { refused[host] = refusal }
            }
            if case .open = step.action {
                connections[step.connection] = nil
            } else {
                connections[step.connection]?.subtract(step.hosts)
            }
            return
        }
        guard case .open(let old?) = step.action else { return }
        for host in step.hosts { home[host] = step.connection }
        drop(old)
    }

    /// Watched hosts per connection.
    private func liveCounts() -> [Int: Int] {
        home.reduce(into: [:]) { counts, entry in if watchers[entry.key] != nil { counts[entry.value, default: 0] += 1 } }
    }

    /// Places up to `count` queued hosts on `connection`.
    private mutating func take(_ count: Int, to connection: Int) -> [String] {
        let hosts = Array(queue.prefix(count))
        queue.removeFirst(hosts.count)
        for host in hosts { home[host] = connection }
        connections[connection, default: []].formUnion(hosts)
        return hosts
    }

    /// Forgets a connection; its watched hosts (none, or those watched again while it was being replaced) are queued.
    private mutating func drop(_ connection: Int) {
        for host in connections.removeValue(forKey: connection) ?? [] where home[host] == connection {
            home[host] = nil
            if watchers[host] != nil { queue.append(host) }
        }
    }
}
