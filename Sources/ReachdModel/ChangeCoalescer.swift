/// Turns a stream of changes (route messages: a BGP feed replaces routes all day) into reports at most once
/// per `interval`: the first change after a quiet period is reported at once, and changes during the
/// interval that follows are reported together when it ends. A change is never reported more than
/// `interval` late, and a burst of any length costs one report per interval.
///
/// The owner stops listening while `deadline` is set, looks for changes when it passes, and tells what it saw.
public struct ChangeCoalescer: Hashable, Sendable {
    /// The shortest time between two reports, in nanoseconds.
    public let interval: UInt64
    /// Until when changes are gathered rather than reported (monotonic nanoseconds); nil while listening.
    public private(set) var deadline: UInt64?

    public init(intervalNanoseconds: UInt64) {
        interval = intervalNanoseconds
    }

    /// The owner looked at `now` (a change arrived while listening, or the deadline passed) and saw changes or
    /// not; true when they are to be reported now.
    public mutating func observed(changes: Bool, at now: UInt64) -> Bool {
        if changes {
            deadline = now &+ interval
            return true
        }
        if let deadline, now >= deadline { self.deadline = nil }
        return false
    }

    /// Milliseconds until the deadline (rounded up, for `poll`), or nil while listening.
    public func millisecondsToDeadline(from now: UInt64) -> Int32? {
        guard let deadline else { return nil }
        guard deadline > now else { return 0 }
        return Int32(clamping: (deadline - now + 999_999) / 1_000_000)
    }
}
