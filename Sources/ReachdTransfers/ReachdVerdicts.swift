import Logging
import ReachdClient
import ReachdModel
import ReachdMonitor
import ReachdProtocol
import ReachdTransferModel
import Synchronization

/// Where the transfer service's per-host verdicts come from: reachd (`ReachdVerdicts`), or without reachd its
/// own netlink watcher (`HostMonitor`, the code reachd itself runs).
protocol HostVerdicts: AnyObject, Sendable {
    /// `observer` gets every change of a watched host's verdict.
    func setObserver(_ observer: @escaping @Sendable ([StampedVerdict]) -> Void)
    /// The current verdict for `host`, watched or not.
    func verdict(for host: String) async -> StampedVerdict
    /// Starts one caller's watch of `hosts`; their current verdicts.
    func watch(_ hosts: [String]) async -> [StampedVerdict]
    /// Ends one caller's watch of `hosts`.
    func unwatch(_ hosts: [String])
}

extension HostMonitor: HostVerdicts {}

/// Per-host verdicts from reachd, as a client of its socket: one `SubscribeReader` per connection, which sends this
/// client's requests and connects again as `SubscribeMachine` says. Watched hosts are subscribed incrementally, in
/// batches of at most 1,024, over as few connections as reachd's 4,096 subscriptions per connection allow
/// (`HostSubscriptions` decides). Verdicts are restamped with this client's own sequence, so that a restarted
/// reachd's numbering never looks old, and kept for the hosts watched or still subscribed (reachd has no
/// unsubscribe and keeps sending a subscribed host's changes, so a host watched again finds its verdict). While reachd cannot be reached, every
/// watched host is unreachable with the reason "no verdict: reachd is not running" (jobs wait rather than run
/// on a route nobody judged), and reachd is tried again 0.1 s after a drop, backing off to 5 s; a host reachd
/// refuses is unreachable with reachd's answer as the reason, and asked for again 5 s later.
final class ReachdVerdicts: HostVerdicts, Sendable {
    private enum Answer {
        case verdicts([StampedVerdict])
        case refused(String)
        /// The connection went away.
        case lost
    }

    private struct State {
        var plan = HostSubscriptions(perConnection: ReachdVerdicts.hostsPerConnection, batch: Request.maximumHosts)
        /// The readers, one per connection, by a key of this client's own; those retired are gone from here.
        var readers: [Int: SubscribeReader] = [:]
        /// The plan's connection each reader's open connection is.
        var connections: [Int: Int] = [:]
        var nextKey = 0
        /// The readers not retired (a reader is here from its start, and in `readers` once it connected).
        var live: Set<Int> = []
        /// The verdicts of the hosts watched or subscribed: never more than the watched ones plus the slots.
        var latest: [String: StampedVerdict] = [:]
        var pending: [Int64: (reader: Int, continuation: CheckedContinuation<Answer, Never>)] = [:]
        var nextID: Int64 = 0
        var sequence: UInt64 = 0
        var observer: (@Sendable ([StampedVerdict]) -> Void)?
        var working = false
        var stopped = false

        /// The plan's connections open now (not those a step is still opening).
        var open: [Int] { connections.filter { readers[$0.key] != nil }.map(\.value) }

        /// The reader of the plan's `connection`.
        func reader(of connection: Int) -> Int? {
            connections.first { $0.value == connection }?.key
        }
    }

    /// reachd's `ClientHandler.maximumWatchedHosts`.
    static let hostsPerConnection = 4096

    let path: String
    private let state = Mutex(State())
    private let logger: Logger

    init(path: String, logger: Logger) {
        self.path = path
        self.logger = logger
    }

    /// Connects; throws when reachd is not there (the caller decides whether to wait for it: `keepTrying`).
    func start() async throws {
        try openReader(firstMustConnect: true)
    }

    /// Tries again in the background until reachd answers.
    func keepTrying() {
        do {
            try openReader(firstMustConnect: false)
        } catch {
            logger.error("cannot wait for reachd at \(path): \(error)")
        }
    }

    func stop() async {
        let (readers, waiting) = state.withLock { state in
            state.stopped = true
            defer { state.readers = [:]; state.connections = [:]; state.pending = [:] }
            return (Array(state.readers.values), state.pending.values.map(\.continuation))
        }
        for reader in readers { reader.stop() }
        for continuation in waiting { continuation.resume(returning: .lost) }
    }

    func setObserver(_ observer: @escaping @Sendable ([StampedVerdict]) -> Void) {
        state.withLock { $0.observer = observer }
    }

    /// Counts the watch and queues new hosts for subscribing; returns the verdicts known now (the others
    /// follow through the observer).
    func watch(_ hosts: [String]) async -> [StampedVerdict] {
        let known = state.withLock { state in
            state.plan.watch(hosts.filter(Request.isValidHost))
            return hosts.compactMap { host in state.latest[host] ?? placeholder(for: host, in: &state) }
        }
        work()
        return known
    }

    func unwatch(_ hosts: [String]) {
        state.withLock { state in
            _ = state.plan.unwatch(hosts)
            Self.forgetUnsubscribed(&state)
        }
        work()
    }

    /// Drops the verdicts of hosts neither watched nor subscribed any more (unwatched, or their connection is gone).
    private static func forgetUnsubscribed(_ state: inout State) {
        state.latest = state.latest.filter { state.plan.isWatched($0.key) || state.plan.isSubscribed($0.key) }
    }

    /// The watched host's verdict, else reachd's answer to a `status` request (kept nowhere).
    func verdict(for host: String) async -> StampedVerdict {
        var answer = Answer.lost
        // A connection closed as replaced loses its request: once more on another.
        for _ in 0..<2 {
            let known = state.withLock { state -> (StampedVerdict?, Int?) in
                if let latest = state.latest[host] { return (latest, nil) }
                if let placeholder = placeholder(for: host, in: &state) { return (placeholder, nil) }
                return (nil, state.open.min())
            }
            if let verdict = known.0 { return verdict }
            answer = await request(Request(op: .status, hosts: [host]), on: known.1 ?? -1)
            if case .lost = answer { continue }
            break
        }
        return state.withLock { state in
            switch answer {
            case .verdicts(let verdicts) where !verdicts.isEmpty: return verdicts[0]
            case .refused(let message): return Self.stamp(Self.unjudged(host, "no verdict: reachd refused it: \(message)"), in: &state)
            default: return Self.stamp(Self.noVerdict(for: host, path: path), in: &state)
            }
        }
    }

    /// What stands for a host's verdict without an answer from reachd: reachd is gone, refused it, or cannot
    /// judge the name; nil while its subscription is under way.
    private func placeholder(for host: String, in state: inout State) -> StampedVerdict? {
        guard Request.isValidHost(host) else {
            return Self.stamp(Self.unjudged(host, "no verdict: reachd judges only names and addresses of 1 to 253 letters, digits and .-_:%"), in: &state)
        }
        if state.open.isEmpty { return Self.stamp(Self.noVerdict(for: host, path: path), in: &state) }
        return state.plan.refused[host].map { Self.stamp(Self.unjudged(host, "no verdict: reachd refused it: \($0)"), in: &state) }
    }

    // MARK: Connections

    /// Opens a reader of a connection of its own: the first (its connections become the plan's as they open, each
    /// time reachd is back), or the one a step `planned`. With `firstMustConnect`, throws when reachd is not there.
    private func openReader(firstMustConnect: Bool, planned: Int? = nil) throws(ClientError) {
        let key = try state.withLock { state throws(ClientError) in
            // Planned before reachd went away (or this client stopped): not needed any more.
            if let planned, !state.plan.isOpen(planned) || state.stopped { throw ClientError(.closed, talkingTo: .reachd) }
            defer { state.nextKey += 1 }
            state.live.insert(state.nextKey)
            state.connections[state.nextKey] = planned
            return state.nextKey
        }
        let handlers = SubscribeReader.Handlers(
            verdicts: { [self] in _ = publish($0) }, unreachable: { [self] in lost(key, $0) },
            connected: { [self] in connected(key, $0) }, replies: { [self] in received($0) })
        let reader: SubscribeReader
        do {
            reader = try SubscribeReader.connect(path: path, firstMustConnect: firstMustConnect, handlers: handlers)
        } catch {
            state.withLock { state in
                state.live.remove(key)
                state.connections[key] = nil
            }
            throw error
        }
        let kept = state.withLock { state in
            if state.live.contains(key), !state.stopped { state.readers[key] = reader }
            return state.readers[key] != nil
        }
        if !kept { reader.stop() }
    }

    /// A reader's connection opened: the one a step planned, or the first since reachd was away, which the plan
    /// takes as its own (every watched host is subscribed on it again).
    private func connected(_ key: Int, _ reader: SubscribeReader) {
        let first = state.withLock { state -> Bool? in
            guard !state.stopped, state.live.contains(key) else { return nil }
            if let planned = state.connections[key] {
                guard state.plan.isOpen(planned) else {
                    state.live.remove(key)
                    state.connections[key] = nil
                    return nil
                }
                state.readers[key] = reader
                return false
            }
            state.readers[key] = reader
            let id = state.plan.reserve()
            state.plan.opened(id)
            state.connections[key] = id
            return true
        }
        switch first {
        case nil: reader.stop()
        case true?:
            logger.info("per-host verdicts from reachd at \(path)")
            work()
        case false?: break
        }
    }

    /// A reader's connection ended, or could not be opened: reachd went away, which ends every connection (their
    /// readers stop); this reader connects again as `SubscribeMachine` says.
    private func lost(_ key: Int, _ error: ClientError) {
        let outcome = state.withLock { state -> (others: [SubscribeReader], waiting: [CheckedContinuation<Answer, Never>], wasConnected: Bool,
                                                 watched: [StampedVerdict], observer: (@Sendable ([StampedVerdict]) -> Void)?)? in
            guard !state.stopped, state.live.contains(key) else { return nil }
            let others = state.readers.filter { $0.key != key }.map(\.value)
            state.live = [key]
            state.readers = state.readers.filter { $0.key == key }
            let wasConnected = state.connections[key] != nil
            state.connections = [:]
            let waiting = state.pending.values.map(\.continuation)
            state.pending = [:]
            state.plan.reset()
            Self.forgetUnsubscribed(&state)
            let watched = state.plan.watchedHosts.map { Self.stamp(Self.noVerdict(for: $0, path: path), in: &state) }
            for verdict in watched { state.latest[verdict.verdict.target] = verdict }
            return (others, waiting, wasConnected, watched, state.observer)
        }
        guard let outcome else { return }
        for continuation in outcome.waiting { continuation.resume(returning: .lost) }
        for reader in outcome.others { reader.stop() }
        // A notice, not a warning: under socket activation reachd stops and starts as a matter of course.
        if outcome.wasConnected { logger.notice("reachd at \(path) went away (\(error)): jobs wait until it is back") }
        if !outcome.watched.isEmpty { outcome.observer?(outcome.watched) }
    }

    /// Closes a connection of this client's own accord: its reader stops, its requests are lost.
    private func retire(_ connection: Int) {
        let (reader, waiting) = state.withLock { state -> (SubscribeReader?, [CheckedContinuation<Answer, Never>]) in
            guard let key = state.reader(of: connection) else { return (nil, []) }
            state.connections[key] = nil
            state.live.remove(key)
            let waiting = state.pending.filter { $0.value.reader == key }
            for id in waiting.keys { state.pending[id] = nil }
            return (state.readers.removeValue(forKey: key), waiting.values.map(\.continuation))
        }
        reader?.stop()
        for continuation in waiting { continuation.resume(returning: .lost) }
    }

    /// Runs the subscription steps until none is left (one runner at a time).
    private func work() {
        let start = state.withLock { state in
            guard !state.working, !state.stopped else { return false }
            state.working = true
            return true
        }
        guard start else { return }
        Task {
            while let step = state.withLock({ state in
                let step = state.stopped ? nil : state.plan.next()
                if step == nil { state.working = false }
                return step
            }) {
                await perform(step)
                state.withLock { Self.forgetUnsubscribed(&$0) }
            }
        }
    }

    private func perform(_ step: HostSubscriptions.Step) async {
        switch step.action {
        case .close:
            retire(step.connection)
        case .subscribe:
            finish(step, await subscribe(step.hosts, on: step.connection))
        case .open(let replacing):
            do {
                try openReader(firstMustConnect: true, planned: step.connection)
            } catch {
                return finish(step, .refused("cannot open another connection to reachd: \(error)"))
            }
            let answer = await subscribe(step.hosts, on: step.connection)
            if case .verdicts = answer {
                if let replacing { retire(replacing) }
            } else {
                retire(step.connection)
            }
            finish(step, answer)
        }
    }

    /// Subscribes `hosts` on connection `id`, a request per `Request.maximumHosts`.
    private func subscribe(_ hosts: [String], on id: Int) async -> Answer {
        for start in stride(from: 0, to: hosts.count, by: Request.maximumHosts) {
            let answer = await request(Request(op: .subscribe, hosts: Array(hosts[start..<min(start + Request.maximumHosts, hosts.count)])), on: id)
            if case .verdicts = answer { continue }
            return answer
        }
        return .verdicts([])
    }

    /// Records how a step went; a refusal stands as the refused hosts' verdict until they are asked for again.
    private func finish(_ step: HostSubscriptions.Step, _ answer: Answer) {
        // A lost connection is reachd gone: `lost` starts over.
        if case .lost = answer { return }
        let refusal: String? = if case .refused(let message) = answer { message } else { nil }
        let (refused, observer, followUp) = state.withLock { state in
            let followUp = state.plan.finished(step, refusal: refusal)
            let refused = step.hosts.compactMap { host in
                state.plan.refused[host].map { Self.stamp(Self.unjudged(host, "no verdict: reachd refused it: \($0)"), in: &state) }
            }
            for verdict in refused { state.latest[verdict.verdict.target] = verdict }
            return (refused, state.observer, followUp)
        }
        if !refused.isEmpty {
            logger.warning("reachd refused to watch \(refused.count) hosts: \(refusal ?? "?")")
            observer?(refused)
        }
        guard case .retryRefused(let delay) = followUp else { return }
        Task {
            try? await Task.sleep(for: delay)
            self.state.withLock { $0.plan.retryRefused() }
            self.work()
        }
    }

    /// Sends `request` on connection `id` with an id of its own; its answer (verdicts restamped and published).
    private func request(_ request: Request, on id: Int) async -> Answer {
        await withCheckedContinuation { (continuation: CheckedContinuation<Answer, Never>) in
            let sending = state.withLock { state -> (SubscribeReader, Request)? in
                guard let key = state.reader(of: id), let reader = state.readers[key] else { return nil }
                state.nextID += 1
                var request = request
                request.id = .number(state.nextID)
                state.pending[state.nextID] = (key, continuation)
                return (reader, request)
            }
            guard let (reader, request) = sending else { return continuation.resume(returning: .lost) }
            do {
                try reader.send(request)
            } catch {
                answer(request.id, .lost)
            }
        }
    }

    private func received(_ reply: Reply) {
        switch reply {
        case .subscribed(let id, let verdicts): answer(id, .verdicts(publish(verdicts)))
        case .status(let id, let verdict): answer(id, .verdicts(publish([verdict])))
        case .event(let verdict): _ = publish([verdict])
        case .error(let error): answer(error.id, .refused(error.message))
        default: break
        }
    }

    private func answer(_ id: RequestID?, _ answer: Answer) {
        guard case .number(let number)? = id else { return }
        state.withLock { $0.pending.removeValue(forKey: number) }?.continuation.resume(returning: answer)
    }

    /// Restamps; records those of watched and subscribed hosts, hands the watched ones to the observer; returns them all.
    private func publish(_ verdicts: [StampedVerdict]) -> [StampedVerdict] {
        let (stamped, watched, observer) = state.withLock { state in
            let stamped = verdicts.map { Self.stamp($0.verdict, at: $0.timestamp, in: &state) }
            for verdict in stamped where state.plan.isWatched(verdict.verdict.target) || state.plan.isSubscribed(verdict.verdict.target) {
                state.latest[verdict.verdict.target] = verdict
            }
            let watched = stamped.filter { state.plan.isWatched($0.verdict.target) }
            return (stamped, watched, state.observer)
        }
        if !watched.isEmpty { observer?(watched) }
        return stamped
    }

    private static func stamp(_ verdict: Verdict, at time: Timestamp = .now(), in state: inout State) -> StampedVerdict {
        state.sequence += 1
        return StampedVerdict(verdict: verdict, sequence: state.sequence, timestamp: time)
    }

    static func noVerdict(for host: String, path: String) -> Verdict {
        unjudged(host, "no verdict: reachd is not running (\(path))")
    }

    /// `host` unreachable for `reason`: nothing judged its route.
    static func unjudged(_ host: String, _ reason: String) -> Verdict {
        let none = FamilyVerdict.unreachable(.notJudged, reason)
        return Verdict(target: host, reachable: false, status: .unreachable, metered: false, meteredReason: nil, interface: nil,
                       flags: [], reason: reason, family: nil, ipv4: none, ipv6: none, reasonCode: .notJudged)
    }
}
