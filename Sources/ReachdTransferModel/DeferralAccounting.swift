import ReachdModel

/// Why a job waits, as the metrics count it: a small fixed set, so the label stays bounded.
public enum DeferralReason: String, Hashable, Sendable, CaseIterable {
    /// The route to its host is metered and the transfer large.
    case metered
    /// No route to its host.
    case unreachable
    /// Waiting to retry after a failed attempt.
    case retry
    /// Anything else (the size being asked on a metered route, the service stopping).
    case other

    /// The reason for `job` (deferred now) given the verdict for its host.
    public static func of(_ job: Job, verdict: Verdict?) -> DeferralReason {
        if job.retryAt != nil { return .retry }
        guard let verdict, verdict.reachable else { return .unreachable }
        return verdict.metered && !job.allowMetered ? .metered : .other
    }
}

/// Time jobs spend deferred, by reason: fed every state change, it returns the seconds a job waited when
/// it leaves `deferred` (the reason is the one it had when it entered).
public struct DeferralAccounting: Sendable {
    private var since: [String: (at: Timestamp, reason: DeferralReason)] = [:]

    public init() {}

    /// `job` is now in `state`; returns the finished wait, if this change ends one.
    public mutating func record(job id: String, state: JobState, reason: @autoclosure () -> DeferralReason,
                                at now: Timestamp) -> (reason: DeferralReason, seconds: Double)? {
        if state == .deferred {
            if since[id] == nil { since[id] = (now, reason()) }
            return nil
        }
        guard let started = since.removeValue(forKey: id) else { return nil }
        return (started.reason, Double(max(0, now.microseconds - started.at.microseconds)) / 1e6)
    }

    /// Jobs deferred now, and for how long so far (counted at a scrape, so a long wait shows before it ends).
    public func waiting(at now: Timestamp) -> [(reason: DeferralReason, seconds: Double)] {
        since.values.map { ($0.reason, Double(max(0, now.microseconds - $0.at.microseconds)) / 1e6) }
    }
}
