#if canImport(Glibc)
import Glibc
#endif

/// Who may use a reachd-transfers instance, decided from the peer's credentials as the kernel gives them
/// (SO_PEERCRED and SO_PEERGROUPS on the socket, the bus daemon's record of them on D-Bus).
public enum InstanceAccess: Sendable, Equatable {
    /// A user's own instance (`systemctl --user`): that user only.
    case user(uid: UInt32)
    /// The system instance: root, the instance's own user, and members of its group.
    case system(uid: UInt32, gid: UInt32, groupName: String)

    public var isSystem: Bool {
        if case .system = self { true } else { false }
    }

    public func admits(_ peer: Owner) -> Bool {
        switch self {
        case .user(let uid): peer.uid == uid
        case .system(let uid, let gid, _): peer.uid == 0 || peer.uid == uid || peer.gid == gid || peer.groups.contains(gid)
        }
    }

    /// What a refused client is told.
    public func refusal(for peer: Owner) -> String {
        switch self {
        case .user(let uid):
            "uid \(peer.uid) is not allowed to use this reachd-transfers: it is uid \(uid)'s own instance "
                + "(use your own: systemctl --user start reachd-transfers.socket, or the system instance: --system)"
        case .system(_, _, let groupName):
            "uid \(peer.uid) is not allowed to use the system reachd-transfers: only root and members of the group "
                + "\(groupName) are (an administrator adds them with usermod -aG \(groupName) USER); "
                + "your own instance: reachctl without --system"
        }
    }

    /// What to add to a refusal to create or read a client's file (`errno` from the call that failed): the system
    /// instance writes as its own user, by design, only where an administrator granted it; say so and name the way out.
    public func fileRefusalHint(errno code: Int32) -> String {
        switch self {
        case .system(_, _, let groupName) where code == EACCES || code == EPERM || code == EROFS:
            " (the system instance reads and writes as its own user, group \(groupName), only in directories granted to it: "
                + "chgrp \(groupName) DIR; chmod 2775 DIR; and ReadWritePaths=DIR in a drop-in of reachd-transfers.service, "
                + "see \"The system instance\" in docs/transfers.md; or, as a normal user, use your own instance: reachctl without --system)"
        case .user where code == EROFS:
            " (reachd-transfers writes only where it is granted: see \"The system instance\" in docs/transfers.md)"
        default: ""
        }
    }
}
