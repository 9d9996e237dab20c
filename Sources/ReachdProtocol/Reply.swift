import ReachdModel

/// A message from the daemon: one JSON object per line, always with `version` and `type`.
public enum Reply: Sendable, Hashable {
    /// Answer to `status`.
    case status(id: RequestID?, verdict: StampedVerdict)
    /// Answer to `subscribe`: the current verdict of every target asked for; `event` lines follow.
    case subscribed(id: RequestID?, verdicts: [StampedVerdict])
    /// A change of the verdict, to subscribers.
    case event(verdict: StampedVerdict)
    /// Answer to `ping`.
    case pong(id: RequestID?)
    /// A refused request; the connection stays open.
    case error(ProtocolError)

    /// The wire name in `type`.
    public var type: String {
        switch self {
        case .status: "status"
        case .subscribed: "subscribed"
        case .event: "event"
        case .pong: "pong"
        case .error: "error"
        }
    }
}
