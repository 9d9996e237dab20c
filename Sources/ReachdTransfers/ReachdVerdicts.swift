import Logging
import NIOCore
import NIOPosix
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

/// Per-host verdicts from reachd, as a client of its socket. Watched hosts are subscribed incrementally, in
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
        var channels: [Int: any Channel] = [:]
        /// Connections this client closes itself: their end is no sign of reachd going away.
        var retired: Set<Int> = []
        /// The verdicts of the hosts watched or subscribed: never more than the watched ones plus the slots.
        var latest: [String: StampedVerdict] = [:]
        var pending: [Int64: (connection: Int, continuation: CheckedContinuation<Answer, Never>)] = [:]
        var nextID: Int64 = 0
        var sequence: UInt64 = 0
        var observer: (@Sendable ([StampedVerdict]) -> Void)?
        var retryDelay = ReachdVerdicts.firstRetry
        var reconnecting = false
        var working = false
        var retryingRefused = false
        var stopped = false
    }

    static let firstRetry = TimeAmount.milliseconds(100)
    static let lastRetry = TimeAmount.seconds(5)
    static let refusedRetry = TimeAmount.seconds(5)
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
        try await connect()
    }

    /// Tries again in the background until reachd answers.
    func keepTrying() {
        scheduleReconnect()
    }

    func stop() async {
        let channels = state.withLock { state in
            state.stopped = true
            state.retired.formUnion(state.channels.keys)
            return Array(state.channels.values)
        }
        for channel in channels { try? await channel.close() }
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
                return (nil, state.channels.keys.min())
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
        if state.channels.isEmpty { return Self.stamp(Self.noVerdict(for: host, path: path), in: &state) }
        return state.plan.refused[host].map { Self.stamp(Self.unjudged(host, "no verdict: reachd refused it: \($0)"), in: &state) }
    }

    // MARK: Connections

    private func connect() async throws {
        try await open(state.withLock { $0.plan.reserve() }, first: true)
        state.withLock { $0.retryDelay = Self.firstRetry }
        logger.info("per-host verdicts from reachd at \(path)")
        work()
    }

    /// Opens connection `id` to reachd and records it: the `first` (after connecting), or one a step planned.
    private func open(_ id: Int, first: Bool = false) async throws {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(ReplyHandler(client: self, connection: id)) }
            }
            .connect(unixDomainSocketPath: path).get()
        let current = state.withLock { state in
            guard !state.stopped, first || state.plan.isOpen(id) else {
                state.retired.insert(id)
                return false
            }
            if first { state.plan.opened(id) }
            state.channels[id] = channel
            return true
        }
        guard current else {
            // Planned before reachd went away (or this client stopped): not needed any more.
            try? await channel.close()
            throw ChannelError.ioOnClosedChannel
        }
    }

    /// Closes a connection of this client's own accord.
    private func retire(_ id: Int) {
        let channel = state.withLock { state -> (any Channel)? in
            guard let channel = state.channels.removeValue(forKey: id) else { return nil }
            state.retired.insert(id)
            return channel
        }
        channel?.close(promise: nil)
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
                try await open(step.connection)
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
        // A lost connection is reachd gone: `disconnected` starts over.
        if case .lost = answer { return }
        let refusal: String? = if case .refused(let message) = answer { message } else { nil }
        let (refused, observer, retry) = state.withLock { state in
            state.plan.finished(step, refusal: refusal)
            let refused = step.hosts.compactMap { host in
                state.plan.refused[host].map { Self.stamp(Self.unjudged(host, "no verdict: reachd refused it: \($0)"), in: &state) }
            }
            for verdict in refused { state.latest[verdict.verdict.target] = verdict }
            let retry = !refused.isEmpty && !state.retryingRefused
            if retry { state.retryingRefused = true }
            return (refused, state.observer, retry)
        }
        guard !refused.isEmpty else { return }
        logger.warning("reachd refused to watch \(refused.count) hosts: \(refusal ?? "?")")
        observer?(refused)
        guard retry else { return }
        MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: Self.refusedRetry) {
            self.state.withLock { state in
                state.retryingRefused = false
                state.plan.retryRefused()
            }
            self.work()
        }
    }

    /// Sends `request` on connection `id` with an id of its own; its answer (verdicts restamped and published).
    private func request(_ request: Request, on id: Int) async -> Answer {
        await withCheckedContinuation { (continuation: CheckedContinuation<Answer, Never>) in
            let sending = state.withLock { state -> (any Channel, Request)? in
                guard let channel = state.channels[id] else { return nil }
                state.nextID += 1
                var request = request
                request.id = .number(state.nextID)
                state.pending[state.nextID] = (id, continuation)
                return (channel, request)
            }
            guard let (channel, request) = sending else { return continuation.resume(returning: .lost) }
            channel.writeAndFlush(ByteBuffer(bytes: request.encodedLine()), promise: nil)
        }
    }

    fileprivate func received(_ reply: Reply) {
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

    /// Connection `id` ended: as asked (retired), or reachd went away, which ends them all.
    fileprivate func disconnected(_ id: Int) {
        let (waiting, others, watched, observer) = state.withLock { state in
            state.channels[id] = nil
            guard state.retired.remove(id) == nil, !state.stopped else {
                let waiting = state.pending.filter { $0.value.connection == id }
                for key in waiting.keys { state.pending[key] = nil }
                return (waiting.values.map(\.continuation), [any Channel](), [StampedVerdict]?.none, state.observer)
            }
            // Every other connection is closed too; theirs end as retired.
            let others = Array(state.channels.values)
            state.retired.formUnion(state.channels.keys)
            state.channels = [:]
            let waiting = state.pending.values.map(\.continuation)
            state.pending = [:]
            state.plan.reset()
            Self.forgetUnsubscribed(&state)
            let watched = state.plan.watchedHosts.map { Self.stamp(Self.noVerdict(for: $0, path: path), in: &state) }
            for verdict in watched { state.latest[verdict.verdict.target] = verdict }
            return (waiting, others, watched, state.observer)
        }
        for continuation in waiting { continuation.resume(returning: .lost) }
        guard let watched else { return }
        for channel in others { channel.close(promise: nil) }
        // A notice, not a warning: under socket activation reachd stops and starts as a matter of course.
        logger.notice("reachd at \(path) went away: jobs wait until it is back")
        if !watched.isEmpty { observer?(watched) }
        scheduleReconnect()
    }

    private func scheduleReconnect() {
        let delay = state.withLock { state -> TimeAmount? in
            guard !state.stopped, !state.reconnecting else { return nil }
            state.reconnecting = true
            let delay = state.retryDelay
            state.retryDelay = min(state.retryDelay * 2, Self.lastRetry)
            return delay
        }
        guard let delay else { return }
        MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: delay) {
            Task {
                self.state.withLock { $0.reconnecting = false }
                do {
                    try await self.connect()
                } catch {
                    self.scheduleReconnect()
                }
            }
        }
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

/// Frames reachd's reply lines and hands them to the client.
private final class ReplyHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    private let client: ReachdVerdicts
    private let connection: Int
    private let framer = Mutex(LineFramer(maximumLineLength: 1 << 22))

    init(client: ReachdVerdicts, connection: Int) {
        self.client = client
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frames = framer.withLock { $0.append(unwrapInboundIn(data).readableBytesView) }
        for case .line(let line) in frames {
            if let reply = try? Reply.decode(line: line) { client.received(reply) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        client.disconnected(connection)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
