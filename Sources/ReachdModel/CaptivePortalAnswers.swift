/// The captive-portal APIs' last answers (by API URL), taken round by round: each round of queries (a new
/// API or another path) has a larger number than the one before, and an answer from a round older than the
/// newest one seen is stale and ignored, so that a cancelled round that lands late cannot undo the next.
public struct CaptivePortalAnswers: Hashable, Sendable {
    /// The newest round seen.
    public private(set) var round: UInt64 = 0
    public private(set) var byURL: [String: CaptivePortalStatus] = [:]

    public init() {}

    /// Takes `answers` as round `round`'s word; returns whether `byURL` changed (false for a stale round).
    public mutating func take(_ answers: [String: CaptivePortalStatus], round: UInt64) -> Bool {
        guard round >= self.round else { return false }
        self.round = round
        guard byURL != answers else { return false }
        byURL = answers
        return true
    }
}
