import Synchronization

/// How many host requests (`status` or `subscribe` naming hosts) may wait for their answers: per connection
/// (past that its socket is not read until one is answered) and per user across all their connections (past
/// that a request is refused with `too_many_requests`). Each request resolves at most
/// `HostMonitor.resolutionsAtOnce` names at a time, so one user holds at most `perUser` × that many lookups
/// in the resolver's queues (docs/limits.md).
struct HostRequestLimits: Sendable {
    static let perConnection = 16
    static let perUser = 64
}

/// Host requests waiting for their answers, per uid: a pure count (`HostRequestLedger` shares it).
struct UserRequestCounts: Sendable, Equatable {
    let perUser: Int
    private(set) var waiting: [UInt32: Int] = [:]

    init(perUser: Int = HostRequestLimits.perUser) { self.perUser = perUser }

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

    init(perUser: Int) { counts = Mutex(UserRequestCounts(perUser: perUser)) }

    func admit(uid: UInt32) -> Bool { counts.withLock { $0.admit(uid: uid) } }

    func release(uid: UInt32) { counts.withLock { $0.release(uid: uid) } }
}
