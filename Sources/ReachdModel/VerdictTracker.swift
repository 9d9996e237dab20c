/// Turns a stream of computed verdicts into published ones: a new sequence number only on change.
public struct VerdictTracker: Sendable {
    public private(set) var current: StampedVerdict?

    public init() {}

    /// Records `verdict`; returns the stamped verdict to publish, or nil when nothing changed.
    public mutating func record(_ verdict: Verdict, at time: Timestamp) -> StampedVerdict? {
        if let current, current.verdict == verdict { return nil }
        let next = StampedVerdict(verdict: verdict, sequence: (current?.sequence ?? 0) + 1, timestamp: time)
        current = next
        return next
    }
}
