import Logging
import NIOCore
import NIOPosix
import ReachdModel
import ReachdMonitor
import ReachdProtocol
import ReachdServiceKit
#if canImport(Glibc)
import Glibc
#endif

/// The Unix-socket server: line-delimited JSON (docs/protocol.md) for any number of clients.
public final class SocketServer: Sendable {
    /// Limits that protect the daemon from slow or hostile clients.
    public struct Limits: Sendable {
        /// Bytes queued for one client before it counts as not reading and is dropped.
        public var clientQueueBytes: Int
        /// Connections per user and in all, and the idle timeout (docs/limits.md).
        public var connections: ConnectionLimits

        public init(clientQueueBytes: Int = 256 * 1024, connections: ConnectionLimits = SocketServer.connectionLimits) {
            self.clientQueueBytes = clientQueueBytes
            self.connections = connections
        }
    }

    /// dbus-daemon's defaults for its system bus (256 per user, 2,048 in all), 128 more for root and the
    /// members of reachd's group, and 15 s to send a request (reachctl and the library send theirs at once).
    public static let connectionLimits = ConnectionLimits(perUser: 256, total: 2048, reserved: 128, idleSeconds: 15)

    public let endpoint: SocketEndpoint
    private let hub: VerdictHub
    private let limits: Limits
    private let logger: Logger
    private let acceptor: SocketAcceptor
    private let observer: VerdictHub.ObserverID

    /// Binds the socket (replacing a stale socket file, refusing a live one), or takes the one systemd
    /// passed, and starts serving.
    public init(
        endpoint: SocketEndpoint, hub: VerdictHub, hosts: HostMonitor, group: MultiThreadedEventLoopGroup,
        limits: Limits = Limits(), ledger: HostRequestLedger = HostRequestLedger(), metrics: DaemonMetrics? = nil, logger: Logger
    ) async throws {
        self.endpoint = endpoint
        self.hub = hub
        self.limits = limits
        self.logger = logger
        var registries: [ObjectIdentifier: SubscriberRegistry] = [:]
        let tally = SubscriberTally()
        for loop in group.makeIterator() {
            registries[ObjectIdentifier(loop)] = SubscriberRegistry(eventLoop: loop, metrics: metrics, tally: tally) { client in
                logger.notice("subscriber \(client) is not reading its events; dropped it")
            }
        }
        let queueBytes = limits.clientQueueBytes
        let frozenRegistries = registries
        let memory = MemoryAfterDepartures(loop: group.next())
        let limiter = PeerLimiter(
            limits: limits.connections, isPrivileged: { $0.isPrivileged(includingGroup: true) },
            refusalLine: { Reply.error(ProtocolError(.tooManyConnections, $0)).encodedLine() }, logger: logger,
            count: { metrics?.clientDropped(reason: $0) }
        )
        // reachd accepts each connection itself and hands it to NIO, so that the registry knows the descriptor
        // it writes events to (NIO names none of its channels' descriptors).
        acceptor = try SocketAcceptor(endpoint: endpoint, backlog: 4096, logger: logger) { fd in
            let loop = group.next()
            let registry = frozenRegistries[ObjectIdentifier(loop)]!
            ClientBootstrap(group: loop)
                .channelOption(.writeBufferWaterMark, value: .init(low: queueBytes / 2, high: queueBytes))
                // Requests are short lines: start reads small so thousands of idle subscribers stay cheap.
                // At most 16 KiB a read: what a connection holding back its lines keeps (ClientHandler's backlog).
                .channelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 256, maximum: 16384))
                .channelInitializer { child in
                    child.closeFuture.whenComplete { _ in memory.departed() }
                    return limiter.admit(child) { peer in
                        try child.pipeline.syncOperations.addHandler(ClientHandler(
                            hub: hub, hosts: hosts, registry: registry, descriptor: fd, uid: peer.uid,
                            privileged: peer.isPrivileged(includingGroup: true), ledger: ledger, metrics: metrics, logger: logger
                        ))
                    }
                }
                .withConnectedSocket(fd)
                .whenFailure { error in logger.notice("could not serve an accepted connection: \(error)") }
        }
        // Each event is encoded once and written by the publishing thread, or for many subscribers handed to the
        // event loops in turn.
        let serving = Array(registries.values)
        let loops = serving.map(\.eventLoop)
        let fanOut: @Sendable ([(verdict: StampedVerdict, key: String)]) -> Void = { batch in
            let events = batch.map {
                SubscriberRegistry.Event(line: Reply.event(verdict: $0.verdict).encodedLine(), key: $0.key, sequence: $0.verdict.sequence)
            }
            if tally.count.load(ordering: .relaxed) >= SubscriberRegistry.inTurnFrom {
                SubscriberRegistry.inTurn(loops) { serving[$0].broadcast(events, flushHere: true) }
            } else {
                for registry in serving { registry.broadcast(events) }
            }
        }
        observer = hub.addObserver(first: true) { fanOut([($0, SubscriberRegistry.internetKey)]) }
        hosts.setObserverOfAllRequesters { requester, verdicts in
            // A socket's hosts are its user's (ClientHandler watches them as `.user(uid)`).
            guard case .user(let uid) = requester else { return }
            fanOut(verdicts.map { ($0, SubscriberRegistry.key(forHost: $0.verdict.target, uid: uid)) })
        }
    }

    /// Stops accepting and removes the socket file (one systemd passed stays).
    public func shutdown() async {
        hub.removeObserver(observer)
        acceptor.stop()
    }
}
