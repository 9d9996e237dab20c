import Logging
import ReachdModel
import ReachdNetlink
import ReachdSystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Host targets: resolves names (in each requester's turn, `HostResolver`), asks the kernel for the route to
/// every address, judges it, and re-judges the watched hosts whenever the network changes, publishing
/// changes once. Each requester (a user, or the daemon itself) has hosts of its own (`HostKey`): their own
/// resolutions, verdicts and sequences, so that no user learns from another's, and a user whose packets the
/// policy rules route otherwise than reachd's (`UIDRouteRules`) has them judged on the kernel's routes for that
/// user (`RTA_UID`), whenever the rules say so, with no lookup added where they do not. A network change re-judges every watched host with the addresses it already has (a route
/// decision never waits for DNS), off the caller's thread and in slices, requesters in turn (`RejudgeOrder`,
/// `HostMonitor+Rejudge.swift`); the names are resolved again behind it.
public final class HostMonitor: Sendable {
    struct Entry {
        /// The last resolution, kept while a fresh one is sought.
        var resolution: Resolution?
        /// The resolution epoch it was made in: older than the monitor's, it is resolved again.
        var epoch: UInt64 = 0
        var tracker = VerdictTracker()
        var watchers = 0

        /// The resolution, if it was made in `epoch`.
        func resolution(freshIn epoch: UInt64) -> Resolution? { self.epoch == epoch ? resolution : nil }
    }

    struct State {
        var entries: [HostKey: Entry] = [:]
        /// Per requester, the hosts it watches and how many times: whose turn a host's re-judging takes.
        var watchedBy: [ResolutionRequester: [String: Int]] = [:]
        /// Network changes seen; a re-judging pass made for an older one stops at its next slice.
        var changes: UInt64 = 0
        /// The change the latest re-judging pass was made for.
        var rejudgedChange: UInt64 = 0
        /// A re-judging pass runs (on a thread of its own).
        var rejudging = false
        var snapshot = NetworkSnapshot()
        /// Bumped when resolutions go stale: the internet verdict changed, or `refreshSeconds` passed.
        var epoch: UInt64 = 1
        var observer: (@Sendable (ResolutionRequester, [StampedVerdict]) -> Void)?
        /// Told how long each re-judging of the watched hosts took (the metrics).
        var rejudged: (@Sendable (Duration) -> Void)?
        /// Resolves the watched names again every `refreshSeconds`, while any are watched.
        var refresher: Task<Void, Never>?
        /// Per requester, its pass resolving the watched hosts that have no fresh resolution (`resolveWatchedSoon`).
        var passes: [ResolutionRequester: ResolutionPasses] = [:]
        /// Watched hosts whose route lookup went unanswered, judged again by `retrier`.
        var unanswered: Set<HostKey> = []
        var retrier: Task<Void, Never>?
    }

    /// Names one request, or one resolution pass, resolves at once (a subscribe of 4,096 hosts holds at
    /// most this many lookups in the resolver's queues).
    static let resolutionsAtOnce = 4

    /// Unwatched hosts whose results are kept for later `status` requests.
    private static let cachedUnwatched = 256

    private let judge: HostVerdict
    private let refreshSeconds: Double
    private let resolver: HostResolver
    /// The kernel's route decisions for a batch of addresses (`RouteLookup`; tests give their own).
    private let routes: @Sendable ([IPAddress]) -> [RouteDecision]
    /// The same for another user's packets (`RTA_UID`), where policy rules select by uid; nil: not asked.
    private let routesForUser: (@Sendable ([IPAddress], UInt32) -> [RouteDecision])?
    /// The user the kernel routes `routes`' lookups for: reachd's own.
    private let ownUID = getuid()
    let state = Mutex(State())
    /// How the refresh and the retries wait (reachd: its event loops' timers).
    private let sleeper: Sleeper
    let logger: Logger

    /// `refreshSeconds`: how often watched names are resolved again (getaddrinfo tells no TTL); 0 = only
    /// after network changes.
    package convenience init(judge: HostVerdict, refreshSeconds: Double, resolver: HostResolver, sleeper: Sleeper = .task,
                             logger: Logger) throws {
        let lookup = try SerialRouteLookup()
        self.init(judge: judge, refreshSeconds: refreshSeconds, resolver: resolver, sleeper: sleeper, logger: logger,
                  routes: { lookup($0) }, routesForUser: { lookup($0, uid: $1) })
    }

    /// A monitor whose route decisions come from `routes`.
    package init(judge: HostVerdict, refreshSeconds: Double, resolver: HostResolver, sleeper: Sleeper = .task, logger: Logger,
                 routes: @escaping @Sendable ([IPAddress]) -> [RouteDecision],
                 routesForUser: (@Sendable ([IPAddress], UInt32) -> [RouteDecision])? = nil) {
        self.judge = judge
        self.routesForUser = routesForUser
        self.refreshSeconds = refreshSeconds
        self.resolver = resolver
        self.sleeper = sleeper
        self.routes = routes
        self.logger = logger
    }

    /// Where changes of every requester's watched hosts go (the socket server's fan-out), a batch at a time, with
    /// whose hosts they are. One observer at a time: this and `setObserver` replace each other.
    package func setObserverOfAllRequesters(_ observer: @escaping @Sendable (ResolutionRequester, [StampedVerdict]) -> Void) {
        state.withLock { $0.observer = observer }
    }

    /// Where changes of the daemon's own watched hosts go (an in-process monitor's), a batch at a time; replaces the
    /// observer of all requesters.
    package func setObserver(_ observer: @escaping @Sendable ([StampedVerdict]) -> Void) {
        setObserverOfAllRequesters { requester, verdicts in
            if requester == .daemon { observer(verdicts) }
        }
    }

    /// Where the duration of each re-judging after a network change goes.
    package func setRejudgedObserver(_ observer: @escaping @Sendable (Duration) -> Void) {
        state.withLock { $0.rejudged = observer }
    }

    /// The verdicts last recorded for those of `requester`'s `hosts` that have one, by host (nothing is resolved).
    package func currentVerdicts(of hosts: [String], requester: ResolutionRequester = .daemon) -> [String: StampedVerdict] {
        state.withLock { state in
            var verdicts: [String: StampedVerdict] = [:]
            for host in hosts { verdicts[host] = state.entries[HostKey(host, requester)]?.tracker.current }
            return verdicts
        }
    }

    /// Hosts watched by at least one client, each requester's counted apart.
    package var watchedCount: Int { state.withLock { $0.entries.values.filter { $0.watchers > 0 }.count } }

    /// The current verdict for `host`, resolving it in the daemon's own turn if needed.
    package func verdict(for host: String) async -> StampedVerdict { await verdict(for: host, requester: .daemon) }

    /// Starts watching `hosts` for the daemon itself (see `watch(_:requester:)`).
    package func watch(_ hosts: [String]) async -> [StampedVerdict] { await watch(hosts, requester: .daemon) }

    /// Stops one of the daemon's own watches of `hosts`.
    package func unwatch(_ hosts: [String]) { unwatch(hosts, requester: .daemon) }

    /// The current verdict of `requester`'s `host`, resolving it (in `requester`'s turn) if needed.
    package func verdict(for host: String, requester: ResolutionRequester) async -> StampedVerdict {
        let verdict = await resolvedVerdict(of: host, requester: requester)
        state.withLock { Self.trimCache(&$0) }
        return verdict
    }

    /// Starts watching `hosts` (counted per caller) and returns their current verdicts, in order.
    package func watch(_ hosts: [String], requester: ResolutionRequester) async -> [StampedVerdict] {
        addWatchers(hosts, requester: requester)
        var verdicts = [StampedVerdict?](repeating: nil, count: hosts.count)
        await resolveAndJudge(hosts, requester: requester) { index, verdict in verdicts[index] = verdict }
        return verdicts.compactMap { $0 }
    }

    /// `host`'s verdict, judged (and published if it changed) once its name has a fresh resolution.
    private func resolvedVerdict(of host: String, requester: ResolutionRequester) async -> StampedVerdict {
        evaluateAndPublish(host, requester: requester, resolution: await resolution(of: host, requester: requester))
    }

    /// Resolves and judges each of `hosts` as `resolvedVerdict` does, with at most `resolutionsAtOnce` of the
    /// names waiting for the resolver at a time; `each` gets every host's index and verdict as it is done.
    private func resolveAndJudge(_ hosts: [String], requester: ResolutionRequester, each: (Int, StampedVerdict) -> Void) async {
        await withTaskGroup(of: (Int, StampedVerdict).self) { group in
            for (index, host) in hosts.enumerated() {
                if index >= Self.resolutionsAtOnce, let (done, verdict) = await group.next() { each(done, verdict) }
                group.addTask { (index, await self.resolvedVerdict(of: host, requester: requester)) }
            }
            for await (done, verdict) in group { each(done, verdict) }
        }
    }

    /// Starts one caller's watch of `host`, resolving it on the calling thread (blocking), and returns its
    /// current verdict: for callers that cannot wait asynchronously (the library's `startNotifier`).
    package func watchResolvingHere(_ host: String) -> StampedVerdict {
        addWatchers([host], requester: .daemon)
        let epoch = state.withLock { $0.epoch }
        let resolution = SystemResolver.resolve(host)
        store(resolution, of: HostKey(host, .daemon), madeIn: epoch)
        return evaluateAndPublish(host, requester: .daemon, resolution: resolution)
    }

    /// Counts one more watcher of each host and starts the periodic refresh if there is one.
    private func addWatchers(_ hosts: [String], requester: ResolutionRequester) {
        state.withLock { state in
            for host in hosts {
                state.entries[HostKey(host, requester), default: Entry()].watchers += 1
                state.watchedBy[requester, default: [:]][host, default: 0] += 1
            }
            if state.refresher == nil, refreshSeconds > 0 {
                state.refresher = Task { await self.refreshPeriodically() }
            }
        }
    }

    /// Stops one watch of `requester`'s of each of `hosts`.
    package func unwatch(_ hosts: [String], requester: ResolutionRequester) {
        state.withLock { state in
            for host in hosts {
                state.entries[HostKey(host, requester)]?.watchers -= 1
                guard let count = state.watchedBy[requester]?[host] else { continue }
                state.watchedBy[requester]?[host] = count > 1 ? count - 1 : nil
            }
            if state.watchedBy[requester]?.isEmpty == true { state.watchedBy[requester] = nil }
            Self.trimCache(&state)
            if !state.entries.values.contains(where: { $0.watchers > 0 }) {
                state.refresher?.cancel()
                state.refresher = nil
            }
        }
    }

    /// Keeps at most `cachedUnwatched` hosts that nobody watches (answers to one-off `status` requests).
    private static func trimCache(_ state: inout State) {
        let unwatched = state.entries.filter { $0.value.watchers <= 0 }.map(\.key)
        for host in unwatched.dropFirst(cachedUnwatched) { state.entries.removeValue(forKey: host) }
    }

    /// Every `refreshSeconds` the resolutions go stale and the watched hosts are resolved again, each re-judged
    /// as its fresh answer comes.
    private func refreshPeriodically() async {
        while !Task.isCancelled {
            try? await sleeper.sleep(for: .seconds(refreshSeconds))
            guard !Task.isCancelled else { return }
            state.withLock { $0.epoch += 1 }
            resolveWatchedSoon()
        }
    }

    package func stop() {
        state.withLock { state in
            state.refresher?.cancel()
            state.refresher = nil
            state.retrier?.cancel()
            state.retrier = nil
        }
    }

    /// The network changed: every watched host is judged again from the kernel's routes to the addresses it has,
    /// off this thread (`rejudgeSoon`), so that the caller (the watcher, which publishes the internet verdict first)
    /// never waits for it; after a change of the internet verdict the names are resolved again too (another network
    /// may answer differently), and each host is judged again when its fresh answer comes.
    package func networkChanged(_ snapshot: NetworkSnapshot, internetChanged: Bool) {
        let (startPass, resolveAgain) = state.withLock { state -> (Bool, Bool) in
            state.snapshot = snapshot
            if internetChanged { state.epoch += 1 }
            let resolveAgain = state.entries.values.contains { $0.watchers > 0 && $0.resolution(freshIn: state.epoch) == nil }
            state.changes += 1
            guard !state.rejudging, !state.watchedBy.isEmpty else { return (false, resolveAgain) }
            state.rejudging = true
            return (true, resolveAgain)
        }
        if startPass { rejudgeSoon() }
        if resolveAgain { resolveWatchedSoon() }
    }

    /// Resolves (and judges) the watched hosts that have no fresh resolution, each requester's in its own turn of
    /// the resolver (`HostResolver`), so that one user's names that never answer delay no other user's: per
    /// requester one pass at a time, and changes that come during it make it run once more, never a task per host
    /// per change (a link flapping every 150 ms with 1,000 watched hosts once queued 60,000 tasks, 40 MB).
    private func resolveWatchedSoon() {
        let starting = state.withLock { state in
            let requesters = Array(state.watchedBy.keys)
            return requesters.filter { state.passes[$0, default: ResolutionPasses()].networkChanged() }
        }
        for requester in starting {
            Task {
                repeat {
                    let pending = state.withLock { state in
                        (state.watchedBy[requester] ?? [:]).keys.filter { state.entries[HostKey($0, requester)]?.resolution(freshIn: state.epoch) == nil }
                    }
                    await resolveAndJudge(pending, requester: requester) { _, _ in }
                } while state.withLock { state in
                    let again = state.passes[requester]?.passEnded() ?? false
                    if !again { state.passes[requester] = nil }
                    return again
                }
            }
        }
    }

    /// Watched hosts whose route lookup went unanswered keep their last verdict and are judged again: after
    /// 100 ms, doubling to 5 s, until every lookup is answered or they are no longer watched.
    private func retryUnansweredSoon(_ hosts: [HostKey]) {
        state.withLock { state in
            state.unanswered.formUnion(hosts)
            guard state.retrier == nil else { return }
            state.retrier = Task { await self.retryUnanswered() }
        }
    }

    private func retryUnanswered() async {
        var delay = Duration.milliseconds(100)
        while !Task.isCancelled {
            try? await sleeper.sleep(for: delay)
            let hosts = state.withLock { state -> [ResolutionRequester: [(String, Resolution)]] in
                var hosts: [ResolutionRequester: [(String, Resolution)]] = [:]
                for key in state.unanswered {
                    guard let entry = state.entries[key], entry.watchers > 0, let resolution = entry.resolution else { continue }
                    hosts[key.requester, default: []].append((key.host, resolution))
                }
                state.unanswered = []
                if hosts.isEmpty { state.retrier = nil }
                return hosts
            }
            guard !hosts.isEmpty else { return }
            logger.debug("route lookups went unanswered; asking again", metadata: ["hosts": "\(hosts.values.map(\.count).reduce(0, +))"])
            var known: [IPAddress: RouteDecision] = [:]
            for (requester, theirs) in hosts {
                let changed = evaluate(theirs, requester: requester, known: &known).changed
                if !changed.isEmpty { publish(changed, requester: requester) }
            }
            delay = min(delay * 2, .seconds(5))
        }
    }

    func publish(_ verdicts: [StampedVerdict], requester: ResolutionRequester) {
        guard let observer = state.withLock({ $0.observer }) else { return }
        for stamped in verdicts {
            logger.debug("host verdict changed", metadata: [
                "host": "\(stamped.verdict.target)", "status": "\(stamped.verdict.status.rawValue)", "sequence": "\(stamped.sequence)",
            ])
        }
        observer(requester, verdicts)
    }

    /// The fresh resolution of `host`, else resolves it in `requester`'s turn (the resolver makes callers
    /// that ask for the same name at once share one lookup).
    private func resolution(of host: String, requester: ResolutionRequester) async -> Resolution {
        let key = HostKey(host, requester)
        let (cached, epoch) = state.withLock { state in (state.entries[key]?.resolution(freshIn: state.epoch), state.epoch) }
        if let cached { return cached }
        let resolution = await resolver.resolve(host, for: requester)
        store(resolution, of: key, madeIn: epoch)
        return resolution
    }

    /// Keeps `resolution` unless the entry holds one made in a later epoch.
    private func store(_ resolution: Resolution, of key: HostKey, madeIn epoch: UInt64) {
        state.withLock { state in
            if let entry = state.entries[key], entry.resolution != nil, entry.epoch > epoch { return }
            state.entries[key, default: Entry()].resolution = resolution
            state.entries[key]?.epoch = epoch
        }
    }

    /// Looks up the routes of all of `requester`'s hosts' addresses in one batch (for that user where the rules route
    /// their packets otherwise than reachd's), judges each host and records it. `known`: decisions of reachd's own
    /// routes already asked in this pass, which are not asked again (and take this batch's). Returns each host's
    /// current verdict, and those that differ from the last one recorded. A host one of whose lookups went
    /// unanswered keeps its last verdict (if it has one) and is asked about again.
    func evaluate(_ hosts: [(String, Resolution)], requester: ResolutionRequester,
                  known: inout [IPAddress: RouteDecision]) -> (current: [String: StampedVerdict], changed: [StampedVerdict]) {
        var addresses: [IPAddress] = []
        var seen: Set<IPAddress> = []
        for case (_, .addresses(let list)) in hosts {
            for address in list where seen.insert(address).inserted { addresses.append(address) }
        }
        let decisions = routeDecisions(addresses, requester: requester, known: &known)
        let unansweredAddresses = Set(decisions.filter { !$0.value.isAnswer }.keys)
        var unanswered: [HostKey] = []
        let result = state.withLock { state in
            var current: [String: StampedVerdict] = [:]
            var changed: [StampedVerdict] = []
            for (host, resolution) in hosts {
                let key = HostKey(host, requester)
                // The entry holds a resolution that came after this one was read: whoever stored it judges it, and
                // the older one is not recorded over its verdict.
                if let entry = state.entries[key], let stored = entry.resolution, stored != resolution, let last = entry.tracker.current {
                    current[host] = last
                    continue
                }
                if case .addresses(let list) = resolution, list.contains(where: unansweredAddresses.contains) {
                    unanswered.append(key)
                    if let last = state.entries[key]?.tracker.current {
                        current[host] = last
                        continue
                    }
                }
                let verdict = judge.verdict(host: host, resolution: resolution, decisions: decisions, in: state.snapshot)
                // Recorded in place: copying the entry out and back cost two lookups and its verdict's retains.
                let (published, latest) = Self.record(verdict, in: &state.entries[key, default: Entry()])
                // The first verdict of a host reaches its subscribers in their `subscribed` reply.
                if let published, published.sequence > 1 {
                    changed.append(published)
                }
                current[host] = latest
            }
            return (current, changed)
        }
        if !unanswered.isEmpty { retryUnansweredSoon(unanswered) }
        return result
    }

    /// `evaluate` for one batch alone.
    func evaluate(_ hosts: [(String, Resolution)], requester: ResolutionRequester) -> (current: [String: StampedVerdict], changed: [StampedVerdict]) {
        var known: [IPAddress: RouteDecision] = [:]
        return evaluate(hosts, requester: requester, known: &known)
    }

    /// The kernel's route to each address for `requester`: asked with the user's uid where the policy rules route
    /// that user's packets otherwise than reachd's, else reachd's own, of which those in `known` are not asked again.
    private func routeDecisions(_ addresses: [IPAddress], requester: ResolutionRequester,
                                known: inout [IPAddress: RouteDecision]) -> [IPAddress: RouteDecision] {
        guard !addresses.isEmpty else { return [:] }
        if case .user(let uid) = requester, let routesForUser,
           !state.withLock({ $0.snapshot.uidRules.sameRoutes(uid, as: ownUID) }) {
            return Dictionary(zip(addresses, routesForUser(addresses, uid)), uniquingKeysWith: { first, _ in first })
        }
        let asked = addresses.filter { known[$0] == nil }
        if !asked.isEmpty {
            for (address, decision) in zip(asked, routes(asked)) { known[address] = decision }
        }
        var decisions: [IPAddress: RouteDecision] = [:]
        for address in addresses { decisions[address] = known[address] }
        return decisions
    }

    /// Records `verdict` in a host's entry: the change to publish, if any, and the entry's current verdict.
    private static func record(_ verdict: Verdict, in entry: inout Entry) -> (published: StampedVerdict?, current: StampedVerdict?) {
        let published = entry.tracker.record(verdict, at: .now())
        return (published, entry.tracker.current)
    }

    /// One of `requester`'s hosts' current verdict, recorded (and published if it changed).
    private func evaluateAndPublish(_ host: String, requester: ResolutionRequester, resolution: Resolution) -> StampedVerdict {
        let (current, changed) = evaluate([(host, resolution)], requester: requester)
        if !changed.isEmpty { publish(changed, requester: requester) }
        // Recorded just now: a verdict is always there.
        return current[host]!
    }
}

/// One `RouteLookup` socket, used by one caller at a time.
private final class SerialRouteLookup: Sendable {
    private let lookup: Mutex<RouteLookup>

    init() throws { lookup = Mutex(try RouteLookup()) }

    func callAsFunction(_ addresses: [IPAddress], uid: UInt32? = nil) -> [RouteDecision] { lookup.withLock { $0.lookup(addresses, uid: uid) } }
}
