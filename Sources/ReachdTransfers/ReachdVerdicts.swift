import Logging
import NIOCore
import NIOPosix
import ReachdDaemon
import ReachdModel
import ReachdProtocol
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

/// Per-host verdicts from reachd, as a client of its socket: one connection, subscribed to every host a job
/// watches (in batches of at most 1,024; past reachd's 4,096 per connection the connection is made again with
/// the hosts still watched). Verdicts are restamped with this client's own sequence, so that a restarted
/// reachd's numbering never looks old. While reachd cannot be reached, every host is unreachable with the
/// reason "no verdict: reachd is not running" (jobs wait rather than run on a route nobody judged), and the
/// connection is tried again 0.1 s after a drop, backing off to 5 s.
final class ReachdVerdicts: HostVerdicts, Sendable {
    private struct State {
        var channel: (any Channel)?
        var watchers: [String: Int] = [:]
        var subscribed: Set<String> = []
        var latest: [String: StampedVerdict] = [:]
        var pending: [Int64: CheckedContinuation<[StampedVerdict]?, Never>] = [:]
        var nextID: Int64 = 0
        var sequence: UInt64 = 0
        var observer: (@Sendable ([StampedVerdict]) -> Void)?
        var retryDelay = ReachdVerdicts.firstRetry
        var reconnecting = false
        var stopped = false
    }

    static let firstRetry = TimeAmount.milliseconds(100)
    static let lastRetry = TimeAmount.seconds(5)
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
        let channel = state.withLock { state -> (any Channel)? in
            state.stopped = true
            return state.channel
        }
        try? await channel?.close()
    }

    func setObserver(_ observer: @escaping @Sendable ([StampedVerdict]) -> Void) {
        state.withLock { $0.observer = observer }
    }

    func watch(_ hosts: [String]) async -> [StampedVerdict] {
        let (fresh, overflow) = state.withLock { state -> ([String], Bool) in
            var fresh: [String] = []
            for host in hosts {
                state.watchers[host, default: 0] += 1
                if !state.subscribed.contains(host), !fresh.contains(host) { fresh.append(host) }
            }
            return (fresh, state.subscribed.count + fresh.count > Self.hostsPerConnection)
        }
        if overflow {
            // Reconnecting subscribes the watched hosts afresh, the new ones among them.
            let channel = state.withLock { $0.channel }
            try? await channel?.close()
        } else if !fresh.isEmpty {
            await subscribe(fresh)
        }
        return state.withLock { state in hosts.map { state.latest[$0] ?? Self.stamp(Self.noVerdict(for: $0, path: path), in: &state) } }
    }

    func unwatch(_ hosts: [String]) {
        state.withLock { state in
            for host in hosts {
                guard let count = state.watchers[host] else { continue }
                state.watchers[host] = count > 1 ? count - 1 : nil
            }
        }
    }

    func verdict(for host: String) async -> StampedVerdict {
        if let known = state.withLock({ $0.subscribed.contains(host) ? $0.latest[host] : nil }) { return known }
        let answer = await request(Request(op: .status, hosts: [host]))
        return state.withLock { state in answer?.first ?? Self.stamp(Self.noVerdict(for: host, path: path), in: &state) }
    }

    // MARK: Connection

    private func connect() async throws {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(ReplyHandler(client: self)) }
            }
            .connect(unixDomainSocketPath: path).get()
        let watched = state.withLock { state -> [String]? in
            guard !state.stopped else { return nil }
            state.channel = channel
            state.retryDelay = Self.firstRetry
            state.subscribed = []
            return Array(state.watchers.keys)
        }
        guard let watched else {
            try? await channel.close()
            return
        }
        logger.info("per-host verdicts from reachd at \(path)")
        await subscribe(watched)
    }

    private func subscribe(_ hosts: [String]) async {
        for batch in stride(from: 0, to: hosts.count, by: Request.maximumHosts) {
            let part = Array(hosts[batch..<min(batch + Request.maximumHosts, hosts.count)])
            guard await request(Request(op: .subscribe, hosts: part)) != nil else { return }
            state.withLock { state in state.subscribed.formUnion(part) }
        }
    }

    /// Sends `request` with an id of its own; its answer's verdicts (restamped and published), nil when reachd
    /// refused it or is gone.
    private func request(_ request: Request) async -> [StampedVerdict]? {
        await withCheckedContinuation { (continuation: CheckedContinuation<[StampedVerdict]?, Never>) in
            let sending = state.withLock { state -> (any Channel, Request)? in
                guard let channel = state.channel else { return nil }
                state.nextID += 1
                var request = request
                request.id = .number(state.nextID)
                state.pending[state.nextID] = continuation
                return (channel, request)
            }
            guard let (channel, request) = sending else { return continuation.resume(returning: nil) }
            channel.writeAndFlush(ByteBuffer(bytes: request.encodedLine()), promise: nil)
        }
    }

    fileprivate func received(_ reply: Reply) {
        switch reply {
        case .subscribed(let id, let verdicts): answer(id, publish(verdicts))
        case .status(let id, let verdict): answer(id, publish([verdict]))
        case .event(let verdict): _ = publish([verdict])
        case .error(let error):
            logger.warning("reachd refused a request: \(error.message)")
            answer(error.id, nil)
        default: break
        }
    }

    private func answer(_ id: RequestID?, _ verdicts: [StampedVerdict]?) {
        guard case .number(let number)? = id else { return }
        state.withLock { $0.pending.removeValue(forKey: number) }?.resume(returning: verdicts)
    }

    /// Restamps, records and hands to the observer; returns what it published.
    private func publish(_ verdicts: [StampedVerdict]) -> [StampedVerdict] {
        let (stamped, observer) = state.withLock { state in
            let stamped = verdicts.map { Self.stamp($0.verdict, at: $0.timestamp, in: &state) }
            for verdict in stamped { state.latest[verdict.verdict.target] = verdict }
            return (stamped, state.observer)
        }
        observer?(stamped)
        return stamped
    }

    fileprivate func disconnected() {
        let (waiting, watched, observer, stopped) = state.withLock { state in
            state.channel = nil
            state.subscribed = []
            let waiting = Array(state.pending.values)
            state.pending = [:]
            let watched = state.watchers.keys.map { Self.stamp(Self.noVerdict(for: $0, path: path), in: &state) }
            for verdict in watched { state.latest[verdict.verdict.target] = verdict }
            return (waiting, watched, state.observer, state.stopped)
        }
        for continuation in waiting { continuation.resume(returning: nil) }
        guard !stopped else { return }
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
        let reason = "no verdict: reachd is not running (\(path))"
        let none = FamilyVerdict.unreachable(reason)
        return Verdict(target: host, reachable: false, status: .unreachable, metered: false, meteredReason: nil, interface: nil,
                       flags: [], reason: reason, family: nil, ipv4: none, ipv6: none)
    }
}

/// Frames reachd's reply lines and hands them to the client.
private final class ReplyHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    private let client: ReachdVerdicts
    private let framer = Mutex(LineFramer(maximumLineLength: 1 << 22))

    init(client: ReachdVerdicts) { self.client = client }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frames = framer.withLock { $0.append(unwrapInboundIn(data).readableBytesView) }
        for case .line(let line) in frames {
            if let reply = try? Reply.decode(line: line) { client.received(reply) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        client.disconnected()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
