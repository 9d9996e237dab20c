import ReachdModel

/// The host each live job needs and the latest verdict for each such host. A host's entry goes with the
/// last job that needs it, and verdicts for hosts no job needs are not kept: the table never holds more
/// hosts than jobs, however many hosts clients ask about.
public struct JobHosts: Sendable {
    private var hostOfJob: [String: String] = [:]
    private var jobsOfHost: [String: Int] = [:]
    private var verdicts: [String: StampedVerdict] = [:]

    public init() {}

    /// Hosts some job needs.
    public var hostCount: Int { jobsOfHost.count }
    /// Hosts with a verdict kept.
    public var verdictCount: Int { verdicts.count }

    public func host(of job: String) -> String? { hostOfJob[job] }

    public func verdict(forHost host: String) -> StampedVerdict? { verdicts[host] }

    /// Records that `job` needs `host`; true when no other job needed it (the caller starts watching it).
    /// A job already recorded keeps its host.
    public mutating func add(job: String, host: String) -> Bool {
        guard hostOfJob[job] == nil else { return false }
        hostOfJob[job] = host
        jobsOfHost[host, default: 0] += 1
        return jobsOfHost[host] == 1
    }

    /// Forgets `job`; its host when it was the last job that needed it (the caller stops watching it).
    public mutating func remove(job: String) -> String? {
        guard let host = hostOfJob.removeValue(forKey: job), let count = jobsOfHost[host] else { return nil }
        guard count == 1 else {
            jobsOfHost[host] = count - 1
            return nil
        }
        jobsOfHost[host] = nil
        verdicts[host] = nil
        return host
    }

    /// Keeps the newer of each verdict for a needed host (events may arrive out of order); true when any changed.
    public mutating func record(_ changed: [StampedVerdict]) -> Bool {
        var any = false
        for stamped in changed {
            let host = stamped.verdict.target
            guard jobsOfHost[host] != nil else { continue }
            if let known = verdicts[host], known.sequence >= stamped.sequence { continue }
            verdicts[host] = stamped
            any = true
        }
        return any
    }
}
