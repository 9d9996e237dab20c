#if canImport(Glibc)
import Glibc
#endif

/// Socket options shared by the netlink sockets (the watcher's and `RouteLookup`'s).
enum NetlinkSocketOptions {
    /// Asks for a receive buffer of `size` bytes: `SO_RCVBUFFORCE` (beyond `rmem_max`, with CAP_NET_ADMIN),
    /// else `SO_RCVBUF`.
    static func enlargeReceiveBuffer(fd: Int32, to size: Int) {
        var size = Int32(clamping: size)
        let length = socklen_t(MemoryLayout<Int32>.size)
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, length) != 0 {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, length)
        }
    }
}
