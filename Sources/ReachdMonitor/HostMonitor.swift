import Logging
import ReachdModel
import ReachdNetlink
import Synchronization

/// Host targets: resolves names (once at a time per name), asks the kernel for the route to every address,
/// judges it, and re-judges the watched hosts whenever the network changes, publishing changes once.
public final class HostMonitor: Sendable {
    private struct Entry {
        var resolution: Resolution?
        var resolving: Task<Resolution, Never>?
        var tracker = VerdictTracker()
        var watchers = 0
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var snapshot = NetworkSnapshot()
        var observer: (@Sendable ([StampedVerdict]) -> Void)?
        /// Told how long each re-judging of the watched hosts took (the metrics).
        var rejudged: (@Sendable (Duration) -> Void)?
        /// Resolves the watched names again every `refreshSeconds`, while any are watched.
        var refresher: Task<Void, Never>?
        /// Passes resolving the watched hosts that have no resolution (`resolveWatchedSoon`).
        var passes = ResolutionPasses()
    }

    /// Names a resolution pass resolves at once (the resolver has two threads; more would only queue).
    private static let resolutionsAtOnce = 4

    /// Unwatched hosts whose results are kept for later `status` requests.
    private static let cachedUnwatched = 256

    private let judge: HostVerdict
    private let refreshSeconds: Double
    private let resolver: HostResolver
    private let lookup: Mutex<RouteLookup>
    private let state = Mutex(State())
    private let logger: Logger

    /// `refreshSeconds`: how often watched names are resolved again (getaddrinfo tells no TTL); 0 = only
    /// after network changes.
    package init(judge: HostVerdict, refreshSeconds: Double, resolver: HostResolver, logger: Logger) throws {
        self.judge = judge
        self.refreshSeconds = refreshSeconds
        self.resolver = resolver
        self.lookup = Mutex(try RouteLookup())
        self.logger = logger
    }

    /// Where changes of watched hosts go (the socket server's fan-out), a batch at a time.
    package func setObserver(_ observer: @escaping @Sendable ([StampedVerdict]) -> Void) {
        state.withLock { $0.observer = observer }
    }

    /// Where the duration of each re-judging after a network change goes.
    package func setRejudgedObserver(_ observer: @escaping @Sendable (Duration) -> Void) {
        state.withLock { $0.rejudged = observer }
    }

    /// Hosts watched by at least one client.
    package var watchedCount: Int { state.withLock { $0.entries.values.filter { $0.watchers > 0 }.count } }

    /// The current verdict for `host`, resolving it if needed.
    package func verdict(for host: String) async -> StampedVerdict {
        let verdict = evaluateAndPublish(host, resolution: await resolution(of: host))
        state.withLock { Self.trimCache(&$0) }
        return verdict
    }

    /// Starts watching `hosts` (counted per caller) and returns their current verdicts.
    package func watch(_ hosts: [String]) async -> [StampedVerdict] {
        addWatchers(hosts)
        var verdicts: [StampedVerdict] = []
        for host in hosts { verdicts.append(await verdict(for: host)) }
        return verdicts
    }

    /// Starts one caller's watch of `host`, resolving it on the calling thread (blocking), and returns its
    /// current verdict: for callers that cannot wait asynchronously (the library's `startNotifier`).
    package func watchResolvingHere(_ host: String) -> StampedVerdict {
        addWatchers([host])
        let resolution = SystemResolver.resolve(host)
        state.withLock { $0.entries[host]?.resolution = resolution }
        return evaluateAndPublish(host, resolution: resolution)
    }

    /// Counts one more watcher of each host and starts the periodic refresh if there is one.
    private func addWatchers(_ hosts: [String]) {
        state.withLock { state in
            for host in hosts { state.entries[host, default: Entry()].watchers += 1 }
            if state.refresher == nil, refreshSeconds > 0 {
                state.refresher = Task { await self.refreshPeriodically() }
            }
        }
    }

    /// Stops one caller's watch of `hosts`.
    package func unwatch(_ hosts: [String]) {
        state.withLock { state in
            for host in hosts { state.entries[host]?.watchers -= 1 }
            Self.trimCache(&state)
            if !state.entries.values.contains(where: { $0.watchers > 0 }) {
                state.refresher?.cancel()
                state.refresher = nil
            }
        }
    }

    /// Keeps at most `cachedUnwatched` hosts that nobody watches (answers to one-off `status` requests).
    private static func trimCache(_ state: inout State) {
        let unwatched = state.entries.filter { $0.value.watchers <= 0 && $0.value.resolving == nil }.map(\.key)
        for host in unwatched.dropFirst(cachedUnwatched) { state.entries.removeValue(forKey: host) }
    }

    /// Forgets cached resolutions every `refreshSeconds` and re-judges the watched hosts with fresh ones.
    private func refreshPeriodically() async {
        while !Task.isCancelled {
            try? await Task.sleep(nanoseconds: UInt64(refreshSeconds * 1e9))
            guard !Task.isCancelled else { return }
            let watched = state.withLock { state -> [String] in
                for host in state.entries.keys { state.entries[host]?.resolution = nil }
                return state.entries.filter { $0.value.watchers > 0 }.map(\.key)
            }
            var fresh: [(String, Resolution)] = []
            for host in watched { fresh.append((host, await resolution(of: host))) }
            let changed = evaluate(fresh).changed
            if !changed.isEmpty { publish(changed) }
        }
    }

    package func stop() {
        state.withLock { state in
            state.refresher?.cancel()
            state.refresher = nil
        }
    }

    /// The network changed: re-judge every watched host from the kernel's routes; after a change of the
    /// internet verdict the names are resolved again too (another network may answer differently).
    package func networkChanged(_ snapshot: NetworkSnapshot, internetChanged: Bool) {
        let watched = state.withLock { state -> [(String, Resolution?)] in
            state.snapshot = snapshot
            if internetChanged {
                for host in state.entries.keys { state.entries[host]?.resolution = nil }
            }
            return state.entries.filter { $0.value.watchers > 0 }.map { ($0.key, $0.value.resolution) }
        }
        let resolved = watched.compactMap { host, resolution in resolution.map { (host, $0) } }
        if resolved.count < watched.count { resolveWatchedSoon() }
        let started = ContinuousClock.now
        let changed = evaluate(resolved).changed
        if !changed.isEmpty { publish(changed) }
        if !resolved.isEmpty {
            let took = ContinuousClock.now - started
            state.withLock { $0.rejudged }?(took)
            logger.debug("re-judged watched hosts", metadata: [
                "hosts": "\(resolved.count)", "changed": "\(changed.count)", "took": "\(took)",
            ])
        }
    }

    /// Resolves (and judges) the watched hosts that have no resolution, in one pass at a time: changes that come
    /// during a pass make it run once more, never a task per host per change (a link flapping every 150 ms with
    /// 1,000 watched hosts once queued 60,000 tasks, 40 MB).
    private func resolveWatchedSoon() {
        guard state.withLock({ $0.passes.networkChanged() }) else { return }
        Task {
            repeat {
                let pending = state.withLock { state in
                    state.entries.filter { $0.value.watchers > 0 && $0.value.resolution == nil }.map(\.key)
                }
                await withTaskGroup(of: Void.self) { group in
                    for (index, host) in pending.enumerated() {
                        if index >= Self.resolutionsAtOnce { await group.next() }
                        group.addTask { _ = self.evaluateAndPublish(host, resolution: await self.resolution(of: host)) }
                    }
                }
            } while state.withLock { $0.passes.passEnded() }
        }
    }

    private func publish(_ verdicts: [StampedVerdict]) {
        guard let observer = state.withLock({ $0.observer }) else { return }
        for stamped in verdicts {
            logger.debug("host verdict changed", metadata: [
                "host": "\(stamped.verdict.target)", "status": "\(stamped.verdict.status.rawValue)", "sequence": "\(stamped.sequence)",
            ])
        }
        observer(verdicts)
    }

    /// Resolves `host` unless a result is cached; concurrent callers share one resolution.
    private func resolution(of host: String) async -> Resolution {
        let task = state.withLock { state -> Task<Resolution, Never> in
            if let cached = state.entries[host]?.resolution { return Task { cached } }
            if let running = state.entries[host]?.resolving { return running }
            let resolver = self.resolver
            let task = Task { await resolver.resolve(host) }
            state.entries[host, default: Entry()].resolving = task
            return task
        }
        let resolution = await task.value
        state.withLock { state in
            guard state.entries[host]?.resolving == task else { return }
            state.entries[host]?.resolving = nil
            state.entries[host]?.resolution = resolution
        }
        return resolution
    }

    /// Looks up the routes, judges, and records; `changed` is true when the verdict differs from the last.
    /// Looks up the routes of all the hosts' addresses in one batch, judges each host and records it.
    /// Returns each host's current verdict, and those that differ from the last one recorded.
    private func evaluate(_ hosts: [(String, Resolution)]) -> (current: [String: StampedVerdict], changed: [StampedVerdict]) {
        var addresses: [IPAddress] = []
        var seen: Set<IPAddress> = []
        for case (_, .addresses(let list)) in hosts {
            for address in list where seen.insert(address).inserted { addresses.append(address) }
        }
        let answers = addresses.isEmpty ? [] : lookup.withLock { $0.lookup(addresses) }
        let decisions = Dictionary(uniqueKeysWithValues: zip(addresses, answers))
        return state.withLock { state in
            var current: [String: StampedVerdict] = [:]
            var changed: [StampedVerdict] = []
            for (host, resolution) in hosts {
                let verdict = judge.verdict(host: host, resolution: resolution, decisions: decisions, in: state.snapshot)
                // Recorded in place: copying the entry out and back cost two lookups and its verdict's retains.
                let (published, latest) = Self.record(verdict, in: &state.entries[host, default: Entry()])
                // The first verdict of a host reaches its subscribers in their `subscribed` reply.
                if let published, published.sequence > 1 {
                    changed.append(published)
                }
                current[host] = latest
            }
            return (current, changed)
        }
    }

    /// Records `verdict` in a host's entry: the change to publish, if any, and the entry's current verdict.
    private static func record(_ verdict: Verdict, in entry: inout Entry) -> (published: StampedVerdict?, current: StampedVerdict?) {
        let published = entry.tracker.record(verdict, at: .now())
        return (published, entry.tracker.current)
    }

    /// One host's current verdict, recorded (and published if it changed).
    private func evaluateAndPublish(_ host: String, resolution: Resolution) -> StampedVerdict {
        let (current, changed) = evaluate([(host, resolution)])
        if !changed.isEmpty { publish(changed) }
        // Recorded just now: a verdict is always there.
        return current[host]!
    }
}
