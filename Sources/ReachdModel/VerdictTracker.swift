/// Turns a stream of computed verdicts into published ones: a new sequence number only on change.
public struct VerdictTracker: Sendable {
    /// What recording a verdict did.
    public enum Outcome: Hashable, Sendable {
        /// Nothing differs from the current verdict.
        case unchanged
        /// Only the captive portal's counters differ (`Verdict.differsOnlyInPortalCounters`): the current verdict
        /// now carries them, with its sequence and timestamp kept. Not a change of the network.
        case refreshed(StampedVerdict)
        /// A change: the verdict with the next sequence number, to publish.
        case changed(StampedVerdict)
    }

    public private(set) var current: StampedVerdict?

    public init() {}

    /// Records `verdict`; returns the stamped verdict to publish, or nil when nothing changed (a change of the
    /// captive portal's counters alone is taken into `current` but not published).
    public mutating func record(_ verdict: Verdict, at time: Timestamp) -> StampedVerdict? {
        guard case .changed(let next) = recordOutcome(verdict, at: time) else { return nil }
        return next
    }

    /// Records `verdict` and says whether it changed, was refreshed in place, or is the same.
    public mutating func recordOutcome(_ verdict: Verdict, at time: Timestamp) -> Outcome {
        if var current {
            if current.verdict == verdict { return .unchanged }
            if verdict.differsOnlyInPortalCounters(from: current.verdict) {
                current.verdict = verdict
                self.current = current
                return .refreshed(current)
            }
        }
        let next = StampedVerdict(verdict: verdict, sequence: (current?.sequence ?? 0) + 1, timestamp: time)
        current = next
        return .changed(next)
    }
}

extension Verdict {
    /// True when `self` and `other` differ, and only in the values of the captive-portal API's
    /// `seconds-remaining` and `bytes-remaining` (the counters of the same portal's session, which tick while
    /// nothing else changes) and in the bytes used of the link's data budget (its state, limit and period the
    /// same). Such a difference is an update of the counters, not a change of the network. A counter that
    /// appears or disappears is a change (reachd-transfers treats an allowance like a metered link).
    public func differsOnlyInPortalCounters(from other: Verdict) -> Bool {
        self != other && withoutCounters == other.withoutCounters
    }

    private var withoutCounters: Verdict {
        var copy = self
        copy.budget = budget?.withoutCount
        guard var status = captivePortal?.status else { return copy }
        status.secondsRemaining = status.secondsRemaining.map { _ in 0 }
        status.bytesRemaining = status.bytesRemaining.map { _ in 0 }
        copy.captivePortal?.status = status
        return copy
    }
}
