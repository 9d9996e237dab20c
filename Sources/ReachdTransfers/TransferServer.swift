import Logging
import NIOCore
import NIOPosix
import ReachdDaemon
import ReachdProtocol
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// The transfer service's Unix socket: line-delimited JSON (docs/transfers.md). Each connection's
/// requests run in order; the caller's identity is the socket's peer credentials.
final class TransferServer: Sendable {
    private let channel: any Channel
    private let endpoint: SocketServer.Endpoint
    private let logger: Logger

    init(endpoint: SocketServer.Endpoint, scheduler: TransferScheduler, cache: OfflineCache, access: InstanceAccess, logger: Logger) async throws {
        self.logger = logger
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 128 * 1024, high: 1024 * 1024))
            .childChannelInitializer { child in
                guard let provider = child as? SocketOptionProvider else {
                    return child.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
                }
                let credentials: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(level: .socket, name: .init(rawValue: SO_PEERCRED))
                let groups: EventLoopFuture<PeerGroups> = provider.unsafeGetSocketOption(level: .socket, name: .init(rawValue: SO_PEERGROUPS))
                // More groups than PeerGroups holds (ERANGE): none counted, the uid and primary group still are.
                return credentials.and(groups.recover { _ in PeerGroups() }).flatMapThrowing { peer, peerGroups in
                    let owner = Owner(uid: peer.uid, gid: peer.gid, groups: peerGroups.list)
                    try child.pipeline.syncOperations.addHandler(
                        TransferConnection(owner: owner, refusal: access.admits(owner) ? nil : access.refusal(for: owner),
                                           scheduler: scheduler, cache: cache, logger: logger))
                }
            }
        channel = try await endpoint.bind(bootstrap, logger: logger)
        self.endpoint = endpoint
    }

    func shutdown() async {
        try? await channel.close()
        endpoint.removeFile(logger: logger)
    }
}

/// `struct ucred` of SO_PEERCRED (Glibc hides it behind _GNU_SOURCE): three 32-bit fields.
struct PeerCredentials: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// SO_PEERGROUPS' answer: up to 256 supplementary gids, in storage NIO zeroes first. NIO does not hand back
/// the length the kernel wrote, so gid 0 (root's group, never the system instance's: it refuses to run in it)
/// is dropped with the unused tail.
struct PeerGroups: Sendable {
    var storage = InlineArray<256, UInt32>(repeating: 0)

    var list: [UInt32] {
        storage.indices.map { storage[$0] }.filter { $0 != 0 }
    }
}

/// One client: frames lines, hands requests to a per-connection task that answers them in order. What one
/// client can make the daemon hold is bounded: at most `maximumQueuedRequests` requests wait (past that the
/// socket is not read until they are answered), and replies queue only up to the write buffer's high-water
/// mark (1 MiB) plus the one being written: a client that does not read them is disconnected.
final class TransferConnection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let maximumQueuedRequests = 16

    private var framer = LineFramer(maximumLineLength: maximumRequestLineLength)
    /// Requests handed to the session and not yet answered.
    private var queued = 0
    private var context: ChannelHandlerContext?
    private let owner: Owner
    private let refusal: String?
    private let scheduler: TransferScheduler
    private let cache: OfflineCache
    private let logger: Logger
    private var requests: AsyncStream<Result<TransferRequest, ProtocolError>>.Continuation?

    /// `refusal`: why this peer may not use the instance (every request but `ping` is answered with it), nil if it may.
    init(owner: Owner, refusal: String?, scheduler: TransferScheduler, cache: OfflineCache, logger: Logger) {
        self.owner = owner
        self.refusal = refusal
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
        let session = TransferSession(owner: owner, refusal: refusal, scheduler: scheduler, cache: cache, channel: channel, logger: logger)
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
        for frame in framer.append(unwrapInboundIn(data).readableBytesView) {
            switch frame {
            case .oversized:
                enqueue(.failure(ProtocolError(.lineTooLong, "request lines are limited to \(maximumRequestLineLength) bytes")), context: context)
            case .line(let line):
                guard line.contains(where: { $0 != 0x20 && $0 != 0x09 }) else { continue }
                enqueue(TransferRequestParser.parse(line), context: context)
            }
        }
    }

    /// Hands a request on; with `maximumQueuedRequests` waiting, stops reading the socket (the kernel's
    /// buffer, then the client, wait) until one is answered.
    private func enqueue(_ request: Result<TransferRequest, ProtocolError>, context: ChannelHandlerContext) {
        guard let requests else { return }
        queued += 1
        requests.yield(request)
        if queued == Self.maximumQueuedRequests { context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in } }
    }

    private func answered() {
        queued -= 1
        guard queued == Self.maximumQueuedRequests - 1, let context else { return }
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
    private let refusal: String?
    private let scheduler: TransferScheduler
    private let cache: OfflineCache
    private let channel: any Channel
    private let logger: Logger
    private var watcher: Int?

    init(owner: Owner, refusal: String?, scheduler: TransferScheduler, cache: OfflineCache, channel: any Channel, logger: Logger) {
        self.logger = logger
        self.owner = owner
        self.refusal = refusal
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
        if let refusal, request.op != .ping { throw ProtocolError(.permissionDenied, refusal) }
        switch request.op {
        case .ping, .add, .upload, .list, .show, .pause, .resume, .cancel, .refresh, .remove, .clean:
            return try await scheduler.answer(request, owner: owner)
        case .fetch:
            return .fetched(id: request.id, result: try await cache.fetch(request.fetch ?? "", owner: owner))
        case .watch:
            if let watcher { await scheduler.removeWatcher(watcher) }
            let channel = self.channel
            let (token, jobs) = try await scheduler.addWatcher(owner: owner, job: request.job) { job in
                // A watcher that does not read is dropped rather than buffered without bound.
                guard channel.isWritable else { return channel.close(promise: nil) }
                Self.write(.event(job: job), to: channel)
            }
            watcher = token
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
    }

    private static func write(_ reply: TransferReply, to channel: any Channel) {
        channel.writeAndFlush(ByteBuffer(bytes: reply.encodedLine()), promise: nil)
    }
}
