/// What one listening socket lets its peers hold: connections in all and per user, and how long a connection
/// may sit without a request. Every socket the daemons listen on has one (docs/limits.md).
public struct ConnectionLimits: Sendable, Equatable {
    /// Connections one uid may hold at once.
    public var perUser: Int
    /// Connections all unprivileged peers may hold together.
    public var total: Int
    /// Connections beyond `total` that only privileged peers (root, the daemon's own user and group) may open,
    /// so that the administrator is served when everyone else's share is taken.
    public var reserved: Int
    /// Seconds a connection may wait without a complete request while none of its requests is in progress
    /// (a subscriber waiting for events is never idle).
    public var idleSeconds: Int64

    public init(perUser: Int, total: Int, reserved: Int, idleSeconds: Int64) {
        self.perUser = perUser
        self.total = total
        self.reserved = reserved
        self.idleSeconds = idleSeconds
    }
}

/// Open connections counted by uid, against `ConnectionLimits`. A pure value: the listener asks it for each new
/// peer and tells it when a connection closes.
public struct ConnectionLedger: Sendable {
    /// The answer for a new peer.
    public enum Admission: Equatable, Sendable {
        case admitted
        /// Refused, with the reason the peer is told.
        case refused(String)
    }

    public let limits: ConnectionLimits
    /// Open connections of each uid that has any.
    public private(set) var byUser: [UInt32: Int] = [:]
    /// Open connections of unprivileged peers.
    public private(set) var unprivileged = 0
    /// Open connections of privileged peers.
    public private(set) var privileged = 0

    public init(limits: ConnectionLimits) { self.limits = limits }

    /// Counts a new connection of `uid` if the limits allow it.
    public mutating func admit(uid: UInt32, privileged isPrivileged: Bool) -> Admission {
        let held = byUser[uid, default: 0]
        guard held < limits.perUser else {
            return .refused("uid \(uid) holds \(held) connections, the most one user may hold; close some and try again")
        }
        if isPrivileged {
            guard unprivileged + privileged < limits.total + limits.reserved else {
                return .refused("the daemon holds \(limits.total + limits.reserved) connections, as many as it serves; try again later")
            }
            privileged += 1
        } else {
            guard unprivileged + privileged < limits.total else {
                return .refused("the daemon holds \(limits.total) connections, as many as it serves users; try again later")
            }
            unprivileged += 1
        }
        byUser[uid] = held + 1
        return .admitted
    }

    /// Forgets one connection of `uid` admitted with `privileged`.
    public mutating func release(uid: UInt32, privileged isPrivileged: Bool) {
        guard let held = byUser[uid] else { return }
        byUser[uid] = held > 1 ? held - 1 : nil
        if isPrivileged { privileged -= 1 } else { unprivileged -= 1 }
    }

    /// Open connections in all.
    public var open: Int { unprivileged + privileged }
}
