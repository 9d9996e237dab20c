import Logging
import NIOCore
import NIOPosix
import ReachdProtocol
import ReachdServiceKit
import ReachdTransferModel
import ReachdTransferProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The transfer service's Unix socket: line-delimited JSON (docs/transfers.md). Each connection's
/// requests run in order; the caller's identity is the socket's peer credentials.
final class TransferServer: Sendable {
    private let channel: any Channel
    private let endpoint: SocketEndpoint
    private let logger: Logger

    /// dbus-daemon's per-user default (256); 512 in all (a user's own instance serves one user, the system instance
    /// root and its group's members), 64 more for root and the instance's own user; 15 s to send a request.
    static let connectionLimits = ConnectionLimits(perUser: 256, total: 512, reserved: 64, idleSeconds: 15)

    /// Serves `endpoint`. Peers `access` does not admit are told why and closed at once; admitted ones are counted
    /// against `limits`.
    init(endpoint: SocketEndpoint, scheduler: TransferScheduler, cache: OfflineCache, access: InstanceAccess,
         limits: ConnectionLimits = TransferServer.connectionLimits, logger: Logger) async throws {
        self.logger = logger
        let limiter = PeerLimiter(
            limits: limits, isPrivileged: { $0.isPrivileged(includingGroup: false) },
            refusalLine: { TransferReply.error(ProtocolError(.tooManyConnections, $0)).encodedLine() }, logger: logger
        )
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            // Out of descriptors (EMFILE, ENFILE): accepting pauses a second instead of spinning on the ready socket.
            .serverChannelInitializer { AcceptPause.install(on: $0, logger: logger) }
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 128 * 1024, high: 1024 * 1024))
            .childChannelInitializer { child in
                limiter.admit(child, refuse: { peer in
                    let owner = Owner(peer)
                    guard !access.admits(owner) else { return nil }
                    return TransferReply.error(ProtocolError(.permissionDenied, access.refusal(for: owner))).encodedLine()
                }, accept: { peer in
                    try child.pipeline.syncOperations.addHandler(TransferConnection(owner: Owner(peer), scheduler: scheduler, cache: cache, logger: logger))
                })
            }
        channel = try await endpoint.bind(bootstrap, logger: logger)
        self.endpoint = endpoint
    }

    func shutdown() async {
        try? await channel.close()
        endpoint.removeFile(logger: logger)
    }
}

extension Owner {
    /// The owner a Unix-socket peer acts as.
    init(_ peer: Peer) { self.init(uid: peer.uid, gid: peer.gid, groups: peer.groups) }
}

/// One client: frames lines, hands requests to a per-connection task that answers them in order. What one
/// client can make the daemon hold is bounded: at most `maximumQueuedRequests` requests wait (past that the
/// socket is not read until they are answered), and replies queue only up to the write buffer's high-water
/// mark (1 MiB) plus the one being written: a client that does not read them is disconnected.
final class TransferConnection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let maximumQueuedRequests = 16

    private var lines = RequestLines()
    /// Requests handed to the session and not yet answered.
    private var pending = PendingRequests(limit: TransferConnection.maximumQueuedRequests)
    private var context: ChannelHandlerContext?
    private let owner: Owner
    private let scheduler: TransferScheduler
    private let cache: OfflineCache
    private let logger: Logger
    private var requests: AsyncStream<Result<TransferRequest, ProtocolError>>.Continuation?

    init(owner: Owner, scheduler: TransferScheduler, cache: OfflineCache, logger: Logger) {
        self.owner = owner
        self.scheduler = scheduler
        self.cache = cache
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelActive(context: ChannelHandlerContext) {
        let (stream, continuation) = AsyncStream<Result<TransferRequest, ProtocolError>>.makeStream()
        requests = continuation
        let channel = context.channel
        let session = TransferSession(owner: owner, scheduler: scheduler, cache: cache, channel: channel, logger: logger)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        Task {
            for await request in stream {
                await session.handle(request)
                loop.execute { bound.value.answered() }
            }
            await session.close()
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        for line in lines.append(unwrapInboundIn(data).readableBytesView) {
            enqueue(line.flatMap(TransferRequestParser.parse), context: context)
        }
    }

    /// Hands a request on; with `maximumQueuedRequests` waiting, stops reading the socket (the kernel's
    /// buffer, then the client, wait) until one is answered.
    private func enqueue(_ request: Result<TransferRequest, ProtocolError>, context: ChannelHandlerContext) {
        guard let requests else { return }
        context.triggerUserOutboundEvent(ConnectionUse.requestStarted, promise: nil)
        requests.yield(request)
        if pending.started() { context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in } }
    }

    private func answered() {
        pending.answered()
        guard let context, pending.shouldResume(linesHeld: 0) else { return }
        context.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
        context.read()
    }

    func channelInactive(context: ChannelHandlerContext) {
        requests?.finish()
        requests = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Answers one connection's requests in order; a `watch` keeps sending events until the client leaves.
actor TransferSession {
    private let owner: Owner
    private let scheduler: TransferScheduler
    private let cache: OfflineCache
    private let channel: any Channel
    private let logger: Logger
    private var watcher: Int?

    init(owner: Owner, scheduler: TransferScheduler, cache: OfflineCache, channel: any Channel, logger: Logger) {
        self.logger = logger
        self.owner = owner
        self.scheduler = scheduler
        self.cache = cache
        self.channel = channel
    }

    func handle(_ parsed: Result<TransferRequest, ProtocolError>) async {
        switch parsed {
        case .failure(let error): send(.error(error))
        case .success(let request):
            do {
                send(try await answer(request))
            } catch {
                var error = error
                error.id = request.id
                send(.error(error))
            }
        }
    }

    private func answer(_ request: TransferRequest) async throws(ProtocolError) -> TransferReply {
        switch request.op {
        case .ping, .add, .upload, .list, .show, .pause, .resume, .cancel, .refresh, .remove, .clean, .limit:
            return try await scheduler.answer(request, owner: owner)
        case .fetch:
            return .fetched(id: request.id, result: try await cache.fetch(request.fetch ?? "", owner: owner, proxy: request.fetchProxy))
        case .watch:
            if let watcher { await scheduler.removeWatcher(watcher) }
            let channel = self.channel
            let (token, jobs) = try await scheduler.addWatcher(owner: owner, job: request.job) { job in
                // A watcher that does not read is dropped rather than buffered without bound.
                guard channel.isWritable else { return channel.close(promise: nil) }
                Self.write(.event(job: job), to: channel)
            }
            watcher = token
            channel.triggerUserOutboundEvent(ConnectionUse.subscribed, promise: nil)
            return .jobs(id: request.id, jobs: jobs)
        }
    }

    func close() async {
        if let watcher { await scheduler.removeWatcher(watcher) }
        watcher = nil
    }

    /// Sends a reply, or disconnects a client that has stopped reading its replies.
    private func send(_ reply: TransferReply) {
        guard channel.isWritable else {
            logger.notice("transfer client (uid \(owner.uid)) does not read its replies; closing it")
            return channel.close(promise: nil)
        }
        Self.write(reply, to: channel)
        channel.triggerUserOutboundEvent(ConnectionUse.requestAnswered, promise: nil)
    }

    private static func write(_ reply: TransferReply, to channel: any Channel) {
        channel.writeAndFlush(ByteBuffer(bytes: reply.encodedLine()), promise: nil)
    }
}
