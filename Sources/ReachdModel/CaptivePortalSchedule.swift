/// When to ask a network's RFC 8908 captive-portal API again: often while it matters, rarely while it does not,
/// backing off when it does not answer.
public struct CaptivePortalSchedule: Hashable, Sendable {
    /// Seconds until the next query, from the last answer (`status`) or, when there is none, the number of failed
    /// queries in a row (`failures`):
    /// - no answer: 5 s after the first failure, doubling with each further one, at most 300 s (5 minutes);
    /// - captive: 10 s, to notice the user logging in soon;
    /// - not captive with `seconds-remaining` S: 30 s before the session ends, so at S − 30 s, at least 5 s and at
    ///   most 600 s;
    /// - not captive otherwise: 600 s (10 minutes).
    public static func secondsUntilNextQuery(after status: CaptivePortalStatus?, failures: Int) -> Double {
        guard let status else {
            let doublings = failures <= 1 ? 0 : min(failures - 1, 6)
            return min(300, 5 * Double(1 << doublings))
        }
        if status.captive { return 10 }
        guard let remaining = status.secondsRemaining else { return 600 }
        return min(600, max(5, Double(remaining) - 30))
    }
}
