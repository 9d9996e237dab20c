/// At most one log line per `interval` for a repeated event (a flood of refused connections must not flood the
/// journal too); the line that is written says how many were left out since the last one. A pure value; times
/// are monotonic nanoseconds.
public struct LogThrottle: Sendable, Equatable {
    public let interval: UInt64
    private var lastWritten: UInt64?
    private var leftOut = 0

    public init(intervalNanoseconds: UInt64) { self.interval = intervalNanoseconds }

    /// The event happened at `now`: nil when its line is left out, else how many were left out before it.
    public mutating func note(at now: UInt64) -> Int? {
        if let lastWritten, now &- lastWritten < interval {
            leftOut += 1
            return nil
        }
        defer { lastWritten = now; leftOut = 0 }
        return leftOut
    }
}
