import ReachdModel
import ReachdTransferModel
import XCTest

/// Jobs, routes and moments for the job machine's transition tables.
enum Fixture {
    static let host = "a.test"

    static func verdict(reachable: Bool = true, metered: Bool) -> Verdict {
        Verdict(target: host, reachable: reachable, status: reachable ? (metered ? .wwan : .wired) : .unreachable, metered: metered,
                meteredReason: nil, interface: metered ? "wwan0" : "eth0", flags: reachable ? [.reachable] : [], reason: nil,
                family: .ipv4, ipv4: .unreachable(.noRoute, ""), ipv6: .unreachable(.noRoute, ""))
    }

    static let unmetered = JobRoute(host: host, verdict: verdict(metered: false))
    static let metered = JobRoute(host: host, verdict: verdict(metered: true))
    static let unknown = JobRoute(host: host, verdict: nil)

    static let rules = JobRules(gate: TransferGate(meteredThreshold: 1000), retry: RetryPolicy(baseSeconds: 2, maximumSeconds: 60, maximumAttempts: 3),
                                checkpoint: ProgressCheckpoint(intervalSeconds: 1, intervalBytes: 100), eventIntervalSeconds: 0.25)

    /// Second `seconds` of the test's clock (wall and monotonic), with `jitter`.
    static func at(_ seconds: Double, jitter: Double = 0) -> JobMoment {
        JobMoment(now: Timestamp(microseconds: Int64(seconds * 1e6)), monotonic: seconds, jitter: jitter)
    }

    static func job(_ state: JobState = .queued, sha256: String? = nil, refresh: Int64? = nil, upload: Bool = false) -> Job {
        var job = upload
            ? Job(id: "j", sequence: 1, upload: UploadSpec(file: "/tmp/f", url: "http://\(host)/f"), owner: Owner(uid: 1000, gid: 1000),
                  created: at(0).now)
            : Job(id: "j", sequence: 1, spec: DownloadSpec(url: "http://\(host)/f", output: "/tmp/f", sha256: sha256, refreshSeconds: refresh),
                  owner: Owner(uid: 1000, gid: 1000), created: at(0).now)
        job.state = state
        return job
    }

    static func machine(_ job: Job) -> JobMachine { JobMachine(job, rules: rules) }

    /// A machine whose transfer runs (started at second 1 on an unmetered route).
    static func running(_ job: Job = job()) -> JobMachine {
        var machine = machine(job)
        _ = machine.handle(.start, at: at(1))
        return machine
    }

    /// A completed download kept fresh every 60 s, checked last at second 10.
    static func completedRefreshing() -> JobMachine {
        var machine = running(job(refresh: 60))
        _ = machine.handle(.attemptEnded(.complete(total: 500), partialSize: 500), at: at(10))
        _ = machine.handle(.movedIntoPlace(nil), at: at(10))
        return machine
    }
}

extension [JobAction] {
    /// The actions without the bookkeeping ones every change brings (persist, notify, stateChanged, log).
    var effects: [JobAction] {
        filter {
            switch $0 {
            case .persist, .notify, .stateChanged, .log: false
            default: true
            }
        }
    }

    var persisted: Job? {
        compactMap { if case .persist(let job) = $0 { job } else { nil } }.last
    }
}
