import Logging
import NIOCore
import ReachdModel
import ReachdMonitor
import ReachdProtocol
import ReachdServiceKit

/// One client connection: frames request lines, answers them, registers subscribers. It tells the connection's
/// guard when a request starts and is answered, and when the client becomes a subscriber (never idle then).
/// Host requests wait for name resolution: at most `HostRequestLimits.perConnection` of them at once (the
/// lines after them wait, in order, and the socket is not read), and at most `perUser` for one uid. Replies are
/// never dropped: while they fill the connection's queue past its high-water mark, the socket is not read either,
/// and a client that takes none of them for `unreadRepliesSeconds` is closed.
final class ClientHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var lines = RequestLines()
    private let hub: VerdictHub
    private let hosts: HostMonitor?
    private let registry: SubscriberRegistry
    private let descriptor: Int32?
    private let logger: Logger
    private let metrics: DaemonMetrics?
    private var subscribed = false
    /// Hosts this connection watches (with repeats: each subscribe counts), released when it closes.
    private var watchedHosts: [String] = []
    /// Hosts of subscribe requests accepted and still resolving: they count against the limit already.
    private var acceptedHosts = 0
    /// Host subscriptions one connection may hold (each costs route lookups on every network change).
    static let maximumWatchedHosts = 4096
    private var isOpen = true
    /// The peer's uid (the kernel's word): whose turn its lookups take, and whose count its requests use.
    private let uid: UInt32
    /// Root, reachd's own user or a member of its group: its host subscriptions are bounded per connection only.
    private let privileged: Bool
    private let ledger: HostRequestLedger
    /// Host requests of this connection waiting for their answers: with `perConnection` of them the socket is not read.
    private var pending = PendingRequests(limit: HostRequestLimits.perConnection)
    /// Lines read but not handled yet, because `perConnection` host requests wait; at most what one read
    /// brings (the socket is not read meanwhile).
    private var backlog: [Result<[UInt8], ProtocolError>] = []
    private var backlogStart = 0
    private var context: ChannelHandlerContext?
    /// The connection's queue is over its high-water mark with replies the client asked for: its socket is not read
    /// until the queue drains, and the timer closes a client that takes nothing meanwhile.
    private var repliesUnread: Scheduled<Void>?
    /// How long a client may leave its queue over the high-water mark before it is closed as not reading.
    static let unreadRepliesSeconds: Int64 = 15

    /// `descriptor`: the connection's socket as reachd accepted it, which the registry writes events to directly
    /// (nil: events go through the channel's queue only).
    init(hub: VerdictHub, hosts: HostMonitor?, registry: SubscriberRegistry, descriptor: Int32? = nil, uid: UInt32 = 0,
         privileged: Bool = true, ledger: HostRequestLedger = HostRequestLedger(), metrics: DaemonMetrics? = nil, logger: Logger) {
        self.descriptor = descriptor
        self.privileged = privileged
        self.hub = hub
        self.metrics = metrics
        self.hosts = hosts
        self.registry = registry
        self.uid = uid
        self.ledger = ledger
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        backlog += lines.append(buffer.readableBytesView)
        handleBacklog(context: context)
    }

    /// Handles the waiting lines in order, stopping at a request while `perConnection` host requests wait (the
    /// socket is not read then).
    private func handleBacklog(context: ChannelHandlerContext) {
        while backlogStart < backlog.count {
            let line = backlog[backlogStart]
            if case .success = line, !pending.hasRoom { return }
            backlogStart += 1
            context.triggerUserOutboundEvent(ConnectionUse.requestStarted, promise: nil)
            switch line {
            case .failure(let error):
                send(.error(error), context: context)
            case .success(let line):
                handle(RequestParser.parse(line), context: context)
            }
        }
        backlog.removeAll(keepingCapacity: false)
        backlogStart = 0
    }

    /// A host request was answered: the next waiting lines are handled, and the socket read again once none wait
    /// and fewer than `perConnection` host requests do.
    private func hostRequestAnswered() {
        pending.answered()
        ledger.release(uid: uid)
        guard isOpen, let context else { return }
        handleBacklog(context: context)
        if pending.shouldResume(linesHeld: backlog.count - backlogStart), repliesUnread == nil { readAgain(context) }
    }

    private func readAgain(_ context: ChannelHandlerContext) {
        context.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
        context.read()
    }

    /// The queue went over its high-water mark with replies: the socket is not read until it drains, and a client
    /// that takes nothing for `unreadRepliesSeconds` is closed.
    private func holdReadingForReplies(_ channel: any Channel) {
        guard repliesUnread == nil else { return }
        channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
        let bound = NIOLoopBound(self, eventLoop: channel.eventLoop)
        repliesUnread = channel.eventLoop.scheduleTask(in: .seconds(Self.unreadRepliesSeconds)) {
            bound.value.repliesUnread = nil
            guard bound.value.isOpen, !channel.isWritable else { return }
            bound.value.logger.notice("client does not read its replies; closing it")
            bound.value.metrics?.clientDropped(reason: "replies_unread")
            channel.close(promise: nil)
        }
    }

    /// The queue drained below its low-water mark: the socket is read again, unless host requests hold it.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let held = repliesUnread {
            held.cancel()
            repliesUnread = nil
            if !pending.readingPaused { readAgain(context) }
        }
        context.fireChannelWritabilityChanged()
    }

    private func handle(_ parsed: Result<Request, ProtocolError>, context: ChannelHandlerContext) {
        let request: Request
        switch parsed {
        case .failure(let error):
            logger.debug("bad request, answered with an error", metadata: ["code": "\(error.code.rawValue)"])
            send(.error(error), context: context)
            return
        case .success(let parsedRequest):
            request = parsedRequest
        }
        if !request.hosts.isEmpty {
            return handleHosts(request, context: context)
        }
        switch request.op {
        case .ping:
            send(.pong(id: request.id), context: context)
        case .status:
            guard let verdict = hub.current else { return send(notReady(request), context: context) }
            send(.status(id: request.id, verdict: verdict), context: context)
        case .subscribe:
            guard let verdict = hub.current else { return send(notReady(request), context: context) }
            let reply = Reply.subscribed(id: request.id, verdicts: [verdict])
            guard !subscribed else { return send(reply, context: context) }
            subscribed = true
            let key = SubscriberRegistry.internetKey
            write(reply, to: context.channel, subscribing: [(key, verdict.sequence)])
            // A change published between reading the verdict and subscribing went to the subscribers before this one.
            if let now = hub.current, now.sequence > verdict.sequence {
                registry.broadcast([.init(line: Reply.event(verdict: now).encodedLine(), key: key, sequence: now.sequence)])
            }
        }
    }

    /// Host targets need name resolution: answered when it is done, possibly after later requests.
    private func handleHosts(_ request: Request, context: ChannelHandlerContext) {
        guard let hosts else {
            return send(.error(ProtocolError(.badRequest, "host targets are not available", id: request.id)), context: context)
        }
        if request.op == .ping { return send(.pong(id: request.id), context: context) }
        // Counted when accepted, so requests still resolving count against the limit too.
        if request.op == .subscribe, watchedHosts.count + acceptedHosts + request.hosts.count > Self.maximumWatchedHosts {
            return send(.error(ProtocolError(.badRequest, "at most \(Self.maximumWatchedHosts) host subscriptions per connection", id: request.id)), context: context)
        }
        if request.op == .subscribe, !privileged, !ledger.watch(uid: uid, count: request.hosts.count) {
            return send(.error(ProtocolError(
                .tooManyRequests,
                "uid \(uid) watches \(ledger.watched(uid: uid)) hosts; \(request.hosts.count) more would pass \(ledger.watchedPerUser), the most one user may watch over all its connections",
                id: request.id
            )), context: context)
        }
        guard ledger.admit(uid: uid) else {
            if request.op == .subscribe, !privileged { ledger.unwatch(uid: uid, count: request.hosts.count) }
            metrics?.clientDropped(reason: "host_requests")
            return send(.error(ProtocolError(
                .tooManyRequests,
                "uid \(uid) has \(HostRequestLimits.perUser) host requests waiting for their answers, the most one user may have; wait for their answers and try again",
                id: request.id
            )), context: context)
        }
        if pending.started() {
            context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
        }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        let channel = context.channel
        let requester = ResolutionRequester.user(uid)
        if request.op == .subscribe {
            acceptedHosts += request.hosts.count
            Task {
                let verdicts = await hosts.watch(request.hosts, requester: requester)
                loop.execute {
                    bound.value.finishSubscribe(request, verdicts: verdicts, channel: channel)
                    bound.value.hostRequestAnswered()
                }
            }
        } else {
            Task {
                let verdict = await hosts.verdict(for: request.hosts[0], requester: requester)
                loop.execute {
                    bound.value.write(.status(id: request.id, verdict: verdict), to: channel)
                    bound.value.hostRequestAnswered()
                }
            }
        }
    }

    private func finishSubscribe(_ request: Request, verdicts: [StampedVerdict], channel: any Channel) {
        acceptedHosts -= request.hosts.count
        guard isOpen else {
            hosts?.unwatch(request.hosts, requester: .user(uid))
            if !privileged { ledger.unwatch(uid: uid, count: request.hosts.count) }
            return
        }
        watchedHosts += request.hosts
        // The reply carries each host's latest verdict: changes published while the watch was answered (a link
        // flapping under a large subscribe) are in it, not in a second batch of events encoded for this client alone.
        let names = verdicts.map(\.verdict.target)
        let latest = Self.newest(verdicts, hosts?.currentVerdicts(of: names, requester: .user(uid)) ?? [:])
        let targets = latest.map { (SubscriberRegistry.key(forHost: $0.verdict.target, uid: uid), $0.sequence) }
        write(.subscribed(id: request.id, verdicts: latest), to: channel, subscribing: targets)
        // Changes published since then went to the subscribers before this one.
        let now = hosts?.currentVerdicts(of: names, requester: .user(uid)) ?? [:]
        let newer = latest.compactMap { sent in now[sent.verdict.target].flatMap { $0.sequence > sent.sequence ? $0 : nil } }
        guard !newer.isEmpty else { return }
        registry.broadcast(newer.map {
            .init(line: Reply.event(verdict: $0).encodedLine(), key: SubscriberRegistry.key(forHost: $0.verdict.target, uid: uid), sequence: $0.sequence)
        })
    }

    /// Each of `verdicts`, or the one `current` holds for its host where that one is newer.
    private static func newest(_ verdicts: [StampedVerdict], _ current: [String: StampedVerdict]) -> [StampedVerdict] {
        verdicts.map { sent in current[sent.verdict.target].flatMap { $0.sequence > sent.sequence ? $0 : nil } ?? sent }
    }

    private func notReady(_ request: Request) -> Reply {
        .error(ProtocolError(.badRequest, "no verdict yet: the daemon is starting", id: request.id))
    }

    /// Writes a reply.
    private func send(_ reply: Reply, context: ChannelHandlerContext) {
        write(reply, to: context.channel)
    }

    /// `subscribing`: the targets (registry keys and sequences) whose verdicts a `subscribed` reply carries; the
    /// connection is subscribed to them as the reply is written, so that their events follow it. A reply is written
    /// whatever the queue holds (the client asked for it); a queue over its high-water mark stops the reading.
    private func write(_ reply: Reply, to channel: any Channel, subscribing targets: [(key: String, sequence: UInt64)] = []) {
        guard isOpen else { return }
        let line = ByteBuffer(bytes: reply.encodedLine())
        if targets.isEmpty {
            // Events to a subscriber go straight to its socket only once nothing of the reply waits in the channel's queue.
            registry.writeThroughChannel(channel) { channel.writeAndFlush(line, promise: nil) }
        } else {
            registry.add(channel, descriptor: descriptor, targets: targets, reply: line)
        }
        if case .subscribed = reply { channel.triggerUserOutboundEvent(ConnectionUse.subscribed, promise: nil) }
        channel.triggerUserOutboundEvent(ConnectionUse.requestAnswered, promise: nil)
        if !channel.isWritable { holdReadingForReplies(channel) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        isOpen = false
        repliesUnread?.cancel()
        repliesUnread = nil
        backlog = []
        backlogStart = 0
        registry.remove(context.channel)
        if !watchedHosts.isEmpty { hosts?.unwatch(watchedHosts, requester: .user(uid)) }
        if !privileged { ledger.unwatch(uid: uid, count: watchedHosts.count) }
        watchedHosts = []
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("client connection error: \(error)")
        context.close(promise: nil)
    }
}
