import Prometheus
import ReachdMetrics
import ReachdModel
import ReachdTransferModel
import Synchronization

/// reachd-transfers' Prometheus metrics (docs/metrics.md): jobs by state, bytes by route kind, time
/// deferred by reason, retries, refresh checks, the offline cache, and the process. No label holds a URL,
/// path or host name.
final class TransferMetrics: Sendable {
    /// How a `fetch` was answered.
    enum CacheResult: String, CaseIterable {
        /// A fresh copy, no request.
        case hit
        /// The server confirmed the copy (304).
        case revalidated
        /// A new body from the server.
        case miss
        /// A stale copy stood in (metered, unreachable, network failure, error answer allowed).
        case stale
        /// Neither the network nor the cache could answer.
        case failed
    }

    private let registry = PrometheusCollectorRegistry()
    private let process: ProcessMetrics
    private let jobs: [JobState: Gauge]
    private let received: [Bool: Counter]
    private let sent: [Bool: Counter]
    private let deferred: [DeferralReason: Counter]
    private let longestDeferral: Gauge
    private let retries: Counter
    private let refreshes: [RefreshResult: Counter]
    private let cache: [CacheResult: Counter]
    private let accounting = Mutex(DeferralAccounting())

    init() {
        let registry = self.registry
        process = ProcessMetrics(registry: registry)
        var jobs: [JobState: Gauge] = [:]
        for state in JobState.allCases {
            jobs[state] = registry.gauge("reachd_transfers_jobs", help: "Jobs by state.", labels: [("state", state.rawValue)])
        }
        self.jobs = jobs
        func byRoute(_ name: String, _ help: String) -> [Bool: Counter] {
            [true: registry.counter(name, help: help, labels: [("route", "metered")]),
             false: registry.counter(name, help: help, labels: [("route", "unmetered")])]
        }
        received = byRoute("reachd_transfers_received_bytes_total", "Bytes downloaded, by the kind of route they came over.")
        sent = byRoute("reachd_transfers_sent_bytes_total", "Bytes uploaded, by the kind of route they went over.")
        var deferred: [DeferralReason: Counter] = [:]
        for reason in DeferralReason.allCases {
            deferred[reason] = registry.counter("reachd_transfers_deferred_seconds_total", help: "Seconds jobs spent deferred, counted when the wait ends, by reason.",
                                                labels: [("reason", reason.rawValue)])
        }
        self.deferred = deferred
        longestDeferral = registry.gauge("reachd_transfers_deferred_longest_seconds", help: "How long the job deferred longest has been waiting, at the scrape (0: none).")
        retries = registry.counter("reachd_transfers_retries_total", help: "Attempts that failed and were tried again (network errors, 5xx, restarts).")
        var refreshes: [RefreshResult: Counter] = [:]
        for result in RefreshResult.allCases {
            refreshes[result] = registry.counter("reachd_transfers_refresh_checks_total", help: "Refresh checks by result.", labels: [("result", result.rawValue)])
        }
        self.refreshes = refreshes
        var cache: [CacheResult: Counter] = [:]
        for result in CacheResult.allCases {
            cache[result] = registry.counter("reachd_transfers_cache_fetches_total", help: "Offline cache fetches by how they were answered.",
                                             labels: [("result", result.rawValue)])
        }
        self.cache = cache
    }

    /// `bytes` more of a job went over a route of that kind.
    func transferred(_ bytes: Int64, upload: Bool, metered: Bool) {
        guard bytes > 0 else { return }
        (upload ? sent : received)[metered]!.increment(by: bytes)
    }

    /// A job changed state; a wait that ends is added to its reason's total.
    func jobChanged(_ job: Job, verdict: Verdict?) {
        let ended = accounting.withLock {
            $0.record(job: job.id, state: job.state, reason: DeferralReason.of(job, verdict: verdict), at: .now())
        }
        if let ended { deferred[ended.reason]!.increment(by: ended.seconds) }
    }

    func retried() { retries.increment() }

    func refreshChecked(_ result: RefreshResult) { refreshes[result]!.increment() }

    func fetched(_ result: CacheResult) { cache[result]!.increment() }

    /// The exposition, with the jobs counted now.
    func render(jobStates: [JobState: Int]) -> [UInt8] {
        process.update()
        for (state, gauge) in jobs { gauge.set(Double(jobStates[state] ?? 0)) }
        let longest = accounting.withLock { $0.waiting(at: .now()).map(\.seconds).max() ?? 0 }
        longestDeferral.set(longest)
        return registry.emitToBuffer()
    }
}
