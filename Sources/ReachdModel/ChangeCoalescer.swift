/// Turns a stream of changes (route messages: a BGP feed replaces routes all day) into reports at a bounded
/// rate: a token bucket of `burst` reports refilled one per `interval`. Changes after a quiet spell are
/// reported at once (up to `burst` in a row); while changes keep coming, those that find the bucket empty
/// are gathered and reported together when the next report is allowed. A change is never reported more
/// than `interval` late, and a stream of any length costs at most one report per interval after the burst.
///
/// The owner stops listening while `deadline` is set, looks for changes when it passes, and tells what it saw.
public struct ChangeCoalescer: Hashable, Sendable {
    /// The time one report's token takes to come back, in nanoseconds.
    public let interval: UInt64
    /// Reports allowed in a row after a quiet spell.
    public let burst: UInt64
    /// Until when changes are gathered rather than reported (monotonic nanoseconds); nil while listening.
    public private(set) var deadline: UInt64?
    /// When the bucket is full again (the "theoretical arrival time" of the generic cell rate algorithm).
    private var full: UInt64 = 0
    /// Changes were seen while no report was allowed.
    private var pending = false

    public init(intervalNanoseconds: UInt64, burst: UInt64 = 1) {
        interval = intervalNanoseconds
        self.burst = max(1, burst)
    }

    /// The earliest moment a report is allowed.
    private var nextAllowed: UInt64 {
        let allowance = (burst - 1) * interval
        return full > allowance ? full - allowance : 0
    }

    /// The owner looked at `now` (a change arrived while listening, or the deadline passed) and saw changes or
    /// not; true when they (and any gathered before) are to be reported now.
    public mutating func observed(changes: Bool, at now: UInt64) -> Bool {
        guard changes || pending else {
            if let deadline, now >= deadline { self.deadline = nil }
            return false
        }
        guard now >= nextAllowed else {
            pending = true
            deadline = nextAllowed
            return false
        }
        pending = false
        full = max(full, now) &+ interval
        deadline = now >= nextAllowed ? nil : nextAllowed
        return true
    }

    /// Milliseconds until the deadline (rounded up, for `poll`), or nil while listening.
    public func millisecondsToDeadline(from now: UInt64) -> Int32? {
        guard let deadline else { return nil }
        guard deadline > now else { return 0 }
        return Int32(clamping: (deadline - now + 999_999) / 1_000_000)
    }
}
