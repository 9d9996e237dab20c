import Logging
import NIOCore
import ReachdModel
import ReachdProtocol

/// One client connection: frames request lines, answers them, registers subscribers.
final class ClientHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var framer = LineFramer(maximumLineLength: maximumRequestLineLength)
    private let hub: VerdictHub
    private let registry: SubscriberRegistry
    private let logger: Logger
    private var subscribed = false

    init(hub: VerdictHub, registry: SubscriberRegistry, logger: Logger) {
        self.hub = hub
        self.registry = registry
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        for frame in framer.append(buffer.readableBytesView) {
            switch frame {
            case .oversized:
                send(.error(ProtocolError(.lineTooLong, "request lines are limited to \(maximumRequestLineLength) bytes")), context: context)
            case .line(let line):
                guard line.contains(where: { $0 != 0x20 && $0 != 0x09 }) else { continue }
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
        switch request.op {
        case .ping:
            send(.pong(id: request.id), context: context)
        case .status:
            guard let verdict = hub.current else { return send(notReady(request), context: context) }
            send(.status(id: request.id, verdict: verdict), context: context)
        case .subscribe:
            guard let verdict = hub.current else { return send(notReady(request), context: context) }
            if !subscribed {
                registry.add(context.channel, sentSequence: verdict.sequence)
                subscribed = true
            }
            send(.subscribed(id: request.id, verdict: verdict), context: context)
        }
    }

    private func notReady(_ request: Request) -> Reply {
        .error(ProtocolError(.badRequest, "no verdict yet: the daemon is starting", id: request.id))
    }

    /// Writes a reply, or drops the client when it has stopped reading what it was sent.
    private func send(_ reply: Reply, context: ChannelHandlerContext) {
        guard context.channel.isWritable else {
            logger.notice("client does not read its replies; closing it")
            context.close(promise: nil)
            return
        }
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: reply.encodedLine())), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if subscribed { registry.remove(context.channel) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("client connection error: \(error)")
        context.close(promise: nil)
    }
}
