import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// `struct ucred` of SO_PEERCRED (Glibc hides it behind _GNU_SOURCE): three 32-bit fields.
struct PeerCredentials: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// SO_PEERGROUPS' answer: up to 256 supplementary gids, in storage NIO zeroes first. NIO does not hand back
/// the length the kernel wrote, so gid 0 (root's group, never the daemons': they refuse to run in it) is
/// dropped with the unused tail.
struct PeerGroups: Sendable {
    var storage = InlineArray<256, UInt32>(repeating: 0)

    var list: [UInt32] {
        storage.indices.map { storage[$0] }.filter { $0 != 0 }
    }
}

extension Peer {
    /// The peer of a Unix-socket channel, from the kernel. More groups than `PeerGroups` holds (ERANGE): none are
    /// counted, the uid and primary group still are.
    public static func read(from channel: any Channel) -> EventLoopFuture<Peer> {
        guard let provider = channel as? SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
        }
        let credentials: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(level: .socket, name: .init(rawValue: SO_PEERCRED))
        let groups: EventLoopFuture<PeerGroups> = provider.unsafeGetSocketOption(level: .socket, name: .init(rawValue: SO_PEERGROUPS))
        return credentials.and(groups.recover { _ in PeerGroups() }).map { peer, peerGroups in
            Peer(pid: peer.pid, uid: peer.uid, gid: peer.gid, groups: peerGroups.list)
        }
    }
}
