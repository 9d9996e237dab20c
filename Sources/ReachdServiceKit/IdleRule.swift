/// What a protocol handler tells its connection's guard (`ConnectionGuard`), as a user outbound event.
public enum ConnectionUse: Sendable, Equatable {
    /// A complete request arrived and is being answered.
    case requestStarted
    /// A request was answered.
    case requestAnswered
    /// The connection now waits for events (a subscriber, a watcher): never idle from here on.
    case subscribed
}

/// When a connection counts as idle: it has no request in progress, is no subscriber, and has sent no complete
/// request for the limit's seconds (bytes of an incomplete line do not count). A pure value.
public struct IdleRule: Sendable, Equatable {
    /// Requests started and not yet answered.
    public private(set) var inProgress = 0
    public private(set) var isSubscriber = false

    public init() {}

    /// Takes `use` in; true when the idle clock runs from now, false when it is stopped.
    public mutating func note(_ use: ConnectionUse) -> Bool {
        switch use {
        case .requestStarted: inProgress += 1
        case .requestAnswered: inProgress = max(0, inProgress - 1)
        case .subscribed: isSubscriber = true
        }
        return clockRuns
    }

    /// Whether the connection can become idle now.
    public var clockRuns: Bool { !isSubscriber && inProgress == 0 }
}
