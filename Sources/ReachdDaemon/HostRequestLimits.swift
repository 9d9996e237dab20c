import Synchronization

/// How many host requests (`status` or `subscribe` naming hosts) may wait for their answers: per connection
/// (past that its socket is not read until one is answered) and per user across all their connections (past
/// that a request is refused with `too_many_requests`). Each request resolves at most
/// `HostMonitor.resolutionsAtOnce` names at a time, so one user holds at most `perUser` × that many lookups
/// in the resolver's queues (docs/limits.md). Host subscriptions are bounded per user too, over all their
/// connections: each one costs a route lookup at every network change and memory for as long as it lasts.
struct HostRequestLimits: Sendable {
    static let perConnection = 16
    static let perUser = 64
    /// Host subscriptions one uid may hold over all its connections (root and the group reachd excepted, as
    /// for the connection limits' reserve).
    static let watchedHostsPerUser = 8192
}

/// Host requests waiting for their answers, and host subscriptions held, per uid: a pure count
/// (`HostRequestLedger` shares it).
struct UserRequestCounts: Sendable, Equatable {
    let perUser: Int
    let watchedPerUser: Int
    private(set) var waiting: [UInt32: Int] = [:]
    private(set) var watched: [UInt32: Int] = [:]

    init(perUser: Int = HostRequestLimits.perUser, watchedPerUser: Int = HostRequestLimits.watchedHostsPerUser) {
        self.perUser = perUser
        self.watchedPerUser = watchedPerUser
    }

    /// Counts `count` more host subscriptions of `uid`; false (nothing counted) when that would take `uid` past
    /// `watchedPerUser`.
    mutating func watch(uid: UInt32, count: Int) -> Bool {
        let now = watched[uid, default: 0]
        guard count <= watchedPerUser - now else { return false }
        if count > 0 { watched[uid] = now + count }
        return true
    }

    /// `count` host subscriptions of `uid` ended.
    mutating func unwatch(uid: UInt32, count: Int) {
        guard let now = watched[uid] else { return }
        watched[uid] = now > count ? now - count : nil
    }

    /// Counts one more request of `uid`; false (nothing counted) when `uid` has `perUser` waiting.
    mutating func admit(uid: UInt32) -> Bool {
        guard waiting[uid, default: 0] < perUser else { return false }
        waiting[uid, default: 0] += 1
        return true
    }

    /// One request of `uid` was answered.
    mutating func release(uid: UInt32) {
        guard let count = waiting[uid] else { return }
        waiting[uid] = count > 1 ? count - 1 : nil
    }
}

/// The counts that every connection of reachd's socket and its D-Bus `CheckHost` share.
public final class HostRequestLedger: Sendable {
    private let counts: Mutex<UserRequestCounts>

    public convenience init() { self.init(perUser: HostRequestLimits.perUser) }

    init(perUser: Int, watchedPerUser: Int = HostRequestLimits.watchedHostsPerUser) {
        counts = Mutex(UserRequestCounts(perUser: perUser, watchedPerUser: watchedPerUser))
    }

    var watchedPerUser: Int { counts.withLock { $0.watchedPerUser } }

    func admit(uid: UInt32) -> Bool { counts.withLock { $0.admit(uid: uid) } }

    func release(uid: UInt32) { counts.withLock { $0.release(uid: uid) } }

    func watch(uid: UInt32, count: Int) -> Bool { counts.withLock { $0.watch(uid: uid, count: count) } }

    /// The number of host subscriptions `uid` holds.
    func watched(uid: UInt32) -> Int { counts.withLock { $0.watched[uid, default: 0] } }

    func unwatch(uid: UInt32, count: Int) { counts.withLock { $0.unwatch(uid: uid, count: count) } }
}
