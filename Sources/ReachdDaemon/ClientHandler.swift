import Logging
import NIOCore
import ReachdModel
import ReachdMonitor
import ReachdProtocol
import ReachdServiceKit

/// One client connection: frames request lines, answers them, registers subscribers. It tells the connection's
/// guard when a request starts and is answered, and when the client becomes a subscriber (never idle then).
final class ClientHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var framer = LineFramer(maximumLineLength: maximumRequestLineLength)
    private let hub: VerdictHub
    private let hosts: HostMonitor?
    private let registry: SubscriberRegistry
    private let logger: Logger
    private let metrics: DaemonMetrics?
    private var subscribed = false
    /// Hosts this connection watches (with repeats: each subscribe counts), released when it closes.
    private var watchedHosts: [String] = []
    /// Host subscriptions one connection may hold (each costs route lookups on every network change).
    static let maximumWatchedHosts = 4096
    private var isOpen = true

    init(hub: VerdictHub, hosts: HostMonitor?, registry: SubscriberRegistry, metrics: DaemonMetrics? = nil, logger: Logger) {
        self.hub = hub
        self.metrics = metrics
        self.hosts = hosts
        self.registry = registry
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        for frame in framer.append(buffer.readableBytesView) {
            if case .line(let line) = frame, !line.contains(where: { $0 != 0x20 && $0 != 0x09 }) { continue }
            context.triggerUserOutboundEvent(ConnectionUse.requestStarted, promise: nil)
            switch frame {
            case .oversized:
                send(.error(ProtocolError(.lineTooLong, "request lines are limited to \(maximumRequestLineLength) bytes")), context: context)
            case .line(let line):
                handle(RequestParser.parse(line), context: context)
            }
        }
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
            if !subscribed {
                registry.add(context.channel, key: SubscriberRegistry.key(forHost: nil), sentSequence: verdict.sequence)
                subscribed = true
            }
            send(.subscribed(id: request.id, verdicts: [verdict]), context: context)
        }
    }

    /// Host targets need name resolution: answered when it is done, possibly after later requests.
    private func handleHosts(_ request: Request, context: ChannelHandlerContext) {
        guard let hosts else {
            return send(.error(ProtocolError(.badRequest, "host targets are not available", id: request.id)), context: context)
        }
        if request.op == .subscribe, watchedHosts.count + request.hosts.count > Self.maximumWatchedHosts {
            return send(.error(ProtocolError(.badRequest, "at most \(Self.maximumWatchedHosts) host subscriptions per connection", id: request.id)), context: context)
        }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        let channel = context.channel
        switch request.op {
        case .status:
            Task {
                let verdict = await hosts.verdict(for: request.hosts[0])
                loop.execute { bound.value.write(.status(id: request.id, verdict: verdict), to: channel) }
            }
        case .subscribe:
            Task {
                let verdicts = await hosts.watch(request.hosts)
                loop.execute { bound.value.finishSubscribe(request, verdicts: verdicts, channel: channel) }
            }
        case .ping:
            send(.pong(id: request.id), context: context)
        }
    }

    private func finishSubscribe(_ request: Request, verdicts: [StampedVerdict], channel: any Channel) {
        guard isOpen else {
            hosts?.unwatch(request.hosts)
            return
        }
        watchedHosts += request.hosts
        for verdict in verdicts {
            registry.add(channel, key: SubscriberRegistry.key(forHost: verdict.verdict.target), sentSequence: verdict.sequence)
        }
        write(.subscribed(id: request.id, verdicts: verdicts), to: channel)
    }

    private func notReady(_ request: Request) -> Reply {
        .error(ProtocolError(.badRequest, "no verdict yet: the daemon is starting", id: request.id))
    }

    /// Writes a reply, or drops the client when it has stopped reading what it was sent.
    private func send(_ reply: Reply, context: ChannelHandlerContext) {
        write(reply, to: context.channel)
    }

    private func write(_ reply: Reply, to channel: any Channel) {
        guard isOpen else { return }
        guard channel.isWritable else {
            logger.notice("client does not read its replies; closing it")
            metrics?.clientDropped(reason: "replies_unread")
            channel.close(promise: nil)
            return
        }
        channel.writeAndFlush(ByteBuffer(bytes: reply.encodedLine()), promise: nil)
        if case .subscribed = reply { channel.triggerUserOutboundEvent(ConnectionUse.subscribed, promise: nil) }
        channel.triggerUserOutboundEvent(ConnectionUse.requestAnswered, promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        isOpen = false
        registry.remove(context.channel)
        if !watchedHosts.isEmpty { hosts?.unwatch(watchedHosts) }
        watchedHosts = []
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("client connection error: \(error)")
        context.close(promise: nil)
    }
}
