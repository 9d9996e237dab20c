import Logging
import NIOCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A Unix-socket peer as the kernel names it (SO_PEERCRED, SO_PEERGROUPS).
public struct Peer: Sendable, Equatable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// Supplementary groups (gid 0 is left out: see `PeerGroups`).
    public var groups: [UInt32]

    public init(pid: Int32 = 0, uid: UInt32, gid: UInt32, groups: [UInt32] = []) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }

    /// Root, the daemon's own user, or (with `group`) a member of the daemon's own group.
    public func isPrivileged(includingGroup group: Bool) -> Bool {
        uid == 0 || uid == geteuid() || (group && (gid == getegid() || groups.contains(getegid())))
    }
}

/// Admits each new connection of a Unix socket against `ConnectionLimits` by the peer's uid: a refused peer is
/// told why in one line and closed at once; an admitted one gets a `ConnectionGuard` and is counted until it closes.
public final class PeerLimiter: Sendable {
    public let limits: ConnectionLimits
    private let ledger: Mutex<ConnectionLedger>
    /// Refusals are logged at most every 10 s.
    private let refusalLog = Mutex(LogThrottle(intervalNanoseconds: 10_000_000_000))
    private let isPrivileged: @Sendable (Peer) -> Bool
    private let refusalLine: @Sendable (String) -> [UInt8]
    private let logger: Logger
    private let count: @Sendable (_ reason: String) -> Void

    /// `refusalLine` encodes a refusal in the socket's protocol; `count` is told each refused (`connection_limit`)
    /// and each idle (`idle`) connection it closes.
    public init(limits: ConnectionLimits, isPrivileged: @escaping @Sendable (Peer) -> Bool,
                refusalLine: @escaping @Sendable (String) -> [UInt8], logger: Logger,
                count: @escaping @Sendable (_ reason: String) -> Void = { _ in }) {
        self.limits = limits
        self.ledger = Mutex(ConnectionLedger(limits: limits))
        self.isPrivileged = isPrivileged
        self.refusalLine = refusalLine
        self.logger = logger
        self.count = count
    }

    /// For a child channel initializer: reads the peer's credentials and admits or refuses it. `refuse` may turn a
    /// peer away first (the line it returns is sent); an admitted peer's pipeline is set up by `accept`.
    public func admit(_ channel: any Channel, refuse: @escaping @Sendable (Peer) -> [UInt8]? = { _ in nil },
                      accept: @escaping @Sendable (Peer) throws -> Void) -> EventLoopFuture<Void> {
        Peer.read(from: channel).flatMapThrowing { peer in
            if let line = refuse(peer) { return try Self.turnAway(channel, line: line) }
            let privileged = self.isPrivileged(peer)
            let admission = self.ledger.withLock { $0.admit(uid: peer.uid, privileged: privileged) }
            guard admission == .admitted else {
                if case .refused(let reason) = admission {
                    if let leftOut = self.refusalLog.withLock({ $0.note(at: NIODeadline.now().uptimeNanoseconds) }) {
                        let more = leftOut > 0 ? " (\(leftOut) more refused since the last such line)" : ""
                        self.logger.notice("refused a connection of uid \(peer.uid): \(reason)\(more)")
                    }
                    self.count("connection_limit")
                    try Self.turnAway(channel, line: self.refusalLine(reason))
                }
                return
            }
            channel.closeFuture.whenComplete { _ in self.ledger.withLock { $0.release(uid: peer.uid, privileged: privileged) } }
            let count = self.count
            try channel.pipeline.syncOperations.addHandler(ConnectionGuard(timeout: .seconds(self.limits.idleSeconds)) { count("idle") })
            try accept(peer)
        }
    }

    private static func turnAway(_ channel: any Channel, line: [UInt8]) throws {
        try channel.pipeline.syncOperations.addHandler(RefusalHandler(line: line))
    }
}

/// Sends one line to a refused peer as soon as the connection is up, then closes it without reading.
private final class RefusalHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let line: [UInt8]

    init(line: [UInt8]) { self.line = line }

    func handlerAdded(context: ChannelHandlerContext) {
        context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
        if context.channel.isActive { refuse(context) }
    }

    func channelActive(context: ChannelHandlerContext) { refuse(context) }

    private func refuse(_ context: ChannelHandlerContext) {
        let channel = context.channel
        context.writeAndFlush(NIOAny(ByteBuffer(bytes: line))).whenComplete { _ in channel.close(promise: nil) }
    }
}
