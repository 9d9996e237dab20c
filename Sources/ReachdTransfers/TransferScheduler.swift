import Logging
import ReachdModel
import ReachdProtocol
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// The job queue: a `JobMachine` per job decides, this actor carries out what they decide (transfers,
/// the job store, the users' files, watchers, timers). Up to `concurrency` jobs run at once in priority
/// order; each is gated by the verdict for its own host.
actor TransferScheduler: FetchObserver {
    struct Settings: Sendable {
        var concurrency = 2
        var gate = TransferGate()
        var retry = RetryPolicy()
        var checkpoint = ProgressCheckpoint()
        /// Progress events to watchers at most this often per job.
        var eventIntervalSeconds = 0.25
        /// The netrc credentials come from; nil: none.
        var netrcPath: String?
        /// The instance's proxies (`[downloads] proxy`, else its environment); nil: none.
        var proxies: ProxySettings?
        /// Where the desktop's proxy settings are asked per job (a user's instance whose configuration and
        /// environment name no proxy); nil: nowhere.
        var desktopProxies: DesktopProxyResolver?
        /// The instance's caps (`[downloads] max_rate`, `metered_max_rate`), shared by its transfers; nil: none.
        var instanceRate: SharedRate?
        var meteredRate: SharedRate?
        /// Jobs one user may hold (finished ones included), and the service as a whole.
        var maximumJobsPerUser = 1000
        var maximumJobs = 10000
        /// Finished jobs (completed without refresh, failed, cancelled) are forgotten after this many seconds; 0: kept.
        var keepFinishedSeconds: Int64 = 30 * 86400
        /// Who the instance serves: its refusals to write a file say what its kind allows.
        var access = InstanceAccess.user(uid: getuid())

        /// What every job machine follows.
        var rules: JobRules {
            JobRules(gate: gate, retry: retry, checkpoint: checkpoint, eventIntervalSeconds: eventIntervalSeconds)
        }
    }

    struct Watcher {
        var owner: Owner
        var job: String?
        var send: @Sendable (Job) -> Void
    }

    let store: JobStore
    let files: UserFiles
    let fetcher: Fetcher
    let hosts: any HostVerdicts
    let settings: Settings
    let metrics: TransferMetrics?
    let logger: Logger

    /// Every job's state and bookkeeping: forgetting a job drops all of it.
    var machines: [String: MachineCell] = [:]
    /// The transfer task of each job with an attempt under way.
    var running: [String: Task<Void, Never>] = [:]
    /// The pacer of each attempt under way: the scheduler changes its caps while it runs.
    var pacers: [String: RatePacer] = [:]
    /// The desktop's last answer for each job whose proxy it decides, and the questions asked at start.
    var desktopAnswers: [String: DesktopProxy] = [:]
    var desktopQuestions: Task<Void, Never>?
    /// The connection of each background transfer under way, which gives way to other traffic.
    var yieldingConnections: [String: YieldingConnection] = [:]
    /// In which order the attempts under way started: a job's budget reservation counts those started before it.
    var startOrder: [String: Int] = [:]
    var nextStartOrder = 0
    var jobHosts = JobHosts()
    /// Per watched host, the call that started its watch: its unwatch waits for it.
    var hostWatches: [String: Task<Void, Never>] = [:]
    var watchers: [Int: Watcher] = [:]
    var nextWatcher = 0
    var nextSequence: Int64 = 1
    var wakeTimer: Task<Void, Never>?
    /// Bytes moved on each link that the budget count seen does not hold yet.
    var uncounted = UncountedBudgetBytes()
    /// The job table's failed writes (`TransferScheduler+Table.swift`), and the timer that tries them again.
    var health = JobTableHealth()
    var tableRetry: Task<Void, Never>?
    /// Set by `stopAll`: from then on no transfer starts and no timer is armed.
    var stopping = false
    /// Whether the wall clock can be trusted for jobs' times yet.
    var clock = ClockTrust(latest: nil)
    /// The destinations' free space, looked at off the scheduler.
    var destinations = DestinationLooks()
    /// Between logind's `PrepareForSleep(true)` and `(false)`: nothing is decided, no transfer starts.
    var asleep = false
    /// The host's power as last heard (UPower, power-profiles-daemon); nothing known satisfies every power constraint.
    var power = PowerFacts()

    init(store: JobStore, files: UserFiles, fetcher: Fetcher, hosts: any HostVerdicts, settings: Settings, metrics: TransferMetrics? = nil,
         logger: Logger) {
        self.metrics = metrics
        self.store = store
        self.files = files
        self.fetcher = fetcher
        self.hosts = hosts
        self.settings = settings
        self.logger = logger
    }

    // MARK: Start and network

    /// Loads the stored jobs; interrupted ones resume from their partial files. `setAside`: where a damaged table was
    /// moved at start (`JobStore.open`).
    func load(setAside: String? = nil) async throws {
        health = JobTableHealth(setAside: setAside)
        // A write stuck in a file system that stopped answering returned: its directory's jobs go on.
        files.onAnswered { [weak self] in Task { await self?.reschedule() } }
        if let setAside { logger.error("the job table was damaged: it is set aside as \(setAside), and the queue starts empty") }
        let table = try store.all()
        for refusal in table.refused {
            logger.error("\(refusal): the row is left in the job table and not loaded")
        }
        let stored = table.jobs
        nextSequence = try store.nextSequence()
        clock = ClockTrust(latest: stored.lazy.map(\.updated).max())
        if let behind = checkClock(at: .now()) {
            logger.warning("the wall clock reads before the job table's last change (\(behind)): jobs with times wait until it is set")
        }
        for var job in stored {
            job.viaProxy = proxy(for: job)?.description
            var machine = JobMachine(job, rules: settings.rules)
            let partialSize = job.state.isTerminal ? 0 : await PartialFile.size(of: job, files: files)
            _ = machine.handle(.recovered(partialSize: partialSize), at: moment())
            machines[job.id] = MachineCell(machine)
        }
        logger.info("loaded \(stored.count) jobs, \(machines.values.filter { !$0.job.state.isTerminal }.count) unfinished")
        expireFinished()
        for cell in machines.values where !cell.job.state.isTerminal || cell.job.download?.refreshSeconds != nil {
            watchHost(of: cell.job)
        }
        reschedule()
        askDesktopAboutAll()
    }

    /// Takes the host verdicts of `verdicts`, batch by batch in order, until the stream ends.
    func run(verdicts: AsyncStream<[StampedVerdict]>) async {
        for await batch in verdicts { hostVerdictsChanged(batch) }
    }

    /// New verdicts (events may arrive out of order: the newer sequence wins); only hosts a job needs are kept.
    func hostVerdictsChanged(_ changed: [StampedVerdict]) {
        if jobHosts.record(changed) { reschedule() }
    }

    /// How the job's requests choose their proxy.
    func proxies(of job: Job) -> JobProxy { JobProxy(asked: job.proxy, instance: settings.proxies, desktop: desktopAnswers[job.id]) }

    /// The proxy the job's requests go through; nil: straight to the server.
    func proxy(for job: Job) -> ProxyServer? { proxies(of: job).proxy(for: job.url) }

    /// Watches the host whose route decides the job (the proxy's, when it goes through one), once for all the jobs
    /// that need it.
    func watchHost(of job: Job) {
        guard let host = proxies(of: job).gatingHost(for: job.url),
              jobHosts.add(job: job.id, host: host) else { return }
        hostWatches[host] = Task { self.hostVerdictsChanged(await hosts.watch([host])) }
    }

    /// Ends the watch of the job's host when no other job needs it (after the watch has started).
    func unwatchHost(of id: String) {
        guard let host = jobHosts.remove(job: id) else { return }
        let watch = hostWatches.removeValue(forKey: host)
        Task { [hosts] in
            await watch?.value
            hosts.unwatch([host])
        }
    }

    // MARK: Events and actions

    /// The clock for an event; only an attempt's end draws a jitter (for its retry delay).
    func moment(drawingJitter: Bool = false) -> JobMoment {
        JobMoment(now: .now(), monotonic: MonotonicClock.seconds(), jitter: drawingJitter ? Double.random(in: 0...1) : 0)
    }

    /// Feeds `event` to the job's machine; its actions, to be carried out (none when the job is gone).
    func deliver(_ event: JobEvent, to id: String) -> [JobAction] {
        var drawsJitter = false
        if case .attemptEnded = event { drawsJitter = true }
        return machines[id]?.handle(event, at: moment(drawingJitter: drawsJitter)) ?? []
    }

    /// Feeds an event whose actions need no waiting, and carries them out.
    func feed(_ event: JobEvent, to id: String) {
        for action in deliver(event, to: id) { carryOut(action, for: id) }
    }

    /// Feeds an event and carries out its actions. A job forgotten meanwhile (cancelled, then cleaned) stops here, its slot freed.
    func feedAwaiting(_ event: JobEvent, to id: String) async {
        guard machines[id] != nil else { running[id] = nil; return }
        await carryOutAwaiting(deliver(event, to: id), for: id)
    }

    /// Carries out actions in order, awaiting file operations and feeding their results back.
    func carryOutAwaiting(_ actions: [JobAction], for id: String) async {
        for action in actions {
            guard let job = machines[id]?.job else { running[id] = nil; return }
            switch action {
            case .removePartial:
                await files.removePartial(of: job)
                await feedAwaiting(.partialRemoved, to: id)
            case .verifyDigest:
                let digest: Result<String, JobFailure>
                do {
                    digest = .success(try await files.sha256(ofFileAt: job.partialPath))
                } catch {
                    digest = .failure(JobFailure("\(error)"))
                }
                await feedAwaiting(.digestComputed(digest), to: id)
            case .moveIntoPlace:
                var failure: JobFailure?
                do {
                    try await PartialFile.existing(for: job, files: files).moveIntoPlace(at: job.file)
                } catch {
                    failure = JobFailure("\(error)")
                }
                await feedAwaiting(.movedIntoPlace(failure), to: id)
            case .measureOutput: await feedAwaiting(.outputMeasured(await files.size(of: job.file)), to: id)
            default: carryOut(action, for: id)
            }
        }
    }

    /// Carries out one action that needs no waiting.
    func carryOut(_ action: JobAction, for id: String) {
        switch action {
        case .persist(let job): persist(job)
        case .notify(let job): notify(job)
        case .stateChanged(let job): metrics?.jobChanged(job, verdict: verdict(for: job))
        case .startAttempt:
            running[id] = Task { await self.attempt(id) }
            startOrder[id] = nextStartOrder
            nextStartOrder += 1
        case .stopAttempt: running[id]?.cancel()
        case .probeSize: probeSize(of: id)
        case .watchHost: if let job = machines[id]?.job { watchHost(of: job) }
        case .unwatchHost: unwatchHost(of: id)
        case .attemptOver:
            running[id] = nil
            startOrder[id] = nil
        case .reschedule: reschedule()
        case .forget: forget([id])
        case .countRetry: metrics?.retried()
        case .countRefresh(let result): metrics?.refreshChecked(result)
        case .countTransferred(let bytes, let upload):
            metrics?.transferred(bytes, upload: upload, metered: machines[id].flatMap { verdict(for: $0.job) }?.metered ?? false)
        case .log(let message, let metadata): logger.info("\(message)", metadata: metadata.mapValues { .string($0) })
        case .refuse, .removePartial, .verifyDigest, .moveIntoPlace, .measureOutput:
            assertionFailure("job \(id): \(action) is not carried out here")
        }
    }

    // MARK: Scheduling

    /// The job's host and its verdict as last heard, with the facts its constraints weigh.
    func route(of job: Job) -> JobRoute {
        let host = jobHosts.host(of: job.id) ?? proxies(of: job).gatingHost(for: job.url) ?? "?"
        let verdict = jobHosts.verdict(forHost: host)?.verdict
        return JobRoute(host: host, verdict: verdict, facts: facts(for: job, verdict: verdict))
    }

    /// Re-decides every job against its route and the clock, then starts queued ones in order up to the limit
    /// and arms the timer for the next retry or refresh check.
    func reschedule() {
        // Asleep, jobs stay as the sleep left them (a stopped one with its reason) until the resume decides again.
        guard !stopping, !asleep else { return }
        // One moment for the whole pass, and a route only for the jobs it can change (most jobs of a large queue
        // are completed ones kept fresh, whose check is not due).
        let now = moment()
        if clock.behind != nil, checkClock(at: now.now) == nil { logger.info("the wall clock is trusted now: jobs' times hold") }
        var routes: [(id: String, route: JobRoute)] = []
        for (id, cell) in machines where cell.reevaluates(at: now.now) { routes.append((id, route(of: cell.job))) }
        for (id, route) in routes {
            for action in machines[id]?.handle(.reevaluate(route), at: now) ?? [] { carryOut(action, for: id) }
        }
        // A running job's route may have turned metered, or back: its cap follows.
        for (id, pacer) in pacers {
            guard let job = machines[id]?.job else { continue }
            pacer.change(bytesPerSecond: job.maxRate, metered: verdict(for: job)?.metered ?? false)
        }
        for id in JobQueue.toStart(machines.values.lazy.compactMap(\.place), running: running.count, limit: settings.concurrency) {
            // What a within-budget job may move counts the jobs started just before it in this pass: decided again.
            if let job = machines[id]?.job, job.constraints.network.contains(.withinBudget), !running.isEmpty {
                for action in machines[id]?.handle(.reevaluate(route(of: job)), at: now) ?? [] { carryOut(action, for: id) }
                guard machines[id]?.place != nil else { continue }
            }
            feed(.start, to: id)
        }
        armWakeTimer()
    }

    private func armWakeTimer() {
        wakeTimer?.cancel()
        wakeTimer = nil
        // While the clock is not trusted, also when it reads as late as the job table: then the jobs' times hold.
        guard let next = (machines.values.lazy.compactMap(\.wakeAt) + [clock.behind].compactMap { $0 }).min() else { return }
        let delay = max(0, Double(next.microseconds - Timestamp.now().microseconds) / 1e6) + 0.01
        wakeTimer = Task {
            try? await Task.sleep(for: .seconds(delay))
            guard !Task.isCancelled else { return }
            self.reschedule()
        }
    }

    // MARK: Bookkeeping

    /// The verdict for the job's host, as last heard.
    func verdict(for job: Job) -> Verdict? {
        jobHosts.host(of: job.id).flatMap { jobHosts.verdict(forHost: $0)?.verdict }
    }

    /// How many jobs are in each state (the metrics, at a scrape).
    func stateCounts() -> [JobState: Int] {
        machines.values.reduce(into: [:]) { $0[$1.job.state, default: 0] += 1 }
    }

    func notify(_ job: Job) {
        for watcher in watchers.values where watcher.owner.mayControl(job) && (watcher.job == nil || watcher.job == job.id) {
            watcher.send(job)
        }
    }

    /// Stops every transfer (their partial files stay for the next start).
    func stopAll() async {
        stopping = true
        wakeTimer?.cancel()
        desktopQuestions?.cancel()
        tableRetry?.cancel()
        let tasks = Array(running.values)
        for id in Array(running.keys) { feed(.shutdown, to: id) }
        for task in tasks { await task.value }
        if health.retryNeeded { retryTable() }
    }
}
