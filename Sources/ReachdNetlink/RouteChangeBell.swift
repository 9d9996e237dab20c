import CNetlink
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// Tells that some route changed, not which: hosts ask the kernel for their routes again, so the messages
/// themselves are never read. The socket is subscribed to the route groups with the smallest receive buffer
/// the kernel allows, so a burst of any size overflows it after a few messages: an overflow (ENOBUFS) rings
/// the bell as a message does, and draining costs a few reads however many routes changed.
final class RouteChangeBell {
    private let socket: OpaquePointer

    init() throws(NetlinkError) {
        guard let socket = nl_socket_alloc() else { throw NetlinkError(call: "nl_socket_alloc", code: NLE_NOMEM) }
        self.socket = socket
        var rc = nl_connect(socket, NETLINK_ROUTE)
        guard rc == 0 else { throw NetlinkError(call: "nl_connect", code: rc) }
        var smallest: Int32 = 0
        _ = setsockopt(nl_socket_get_fd(socket), SOL_SOCKET, SO_RCVBUF, &smallest, socklen_t(MemoryLayout<Int32>.size))
        for group in [RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE] {
            rc = nl_socket_add_membership(socket, Int32(group.rawValue))
            guard rc == 0 else { throw NetlinkError(call: "nl_socket_add_membership", code: rc) }
        }
        rc = nl_socket_set_nonblocking(socket)
        guard rc == 0 else { throw NetlinkError(call: "nl_socket_set_nonblocking", code: rc) }
    }

    deinit { nl_socket_free(socket) }

    /// The descriptor to poll.
    var fileDescriptor: Int32 { nl_socket_get_fd(socket) }

    /// Reads at most this many messages per drain: under steady churn the socket refills as fast as it is read.
    private static let readsPerDrain = 64

    /// Empties the socket (or reads `readsPerDrain` messages); true if a message or an overflow was there.
    func drain() -> Bool {
        let fd = nl_socket_get_fd(socket)
        var rang = false
        var scrap = [UInt8](repeating: 0, count: 256)
        for _ in 0..<Self.readsPerDrain {
            // MSG_TRUNC: a message longer than the scrap buffer is discarded whole; its content is not wanted.
            do throws(SystemCallError) {
                _ = try scrap.withUnsafeMutableBytes { space in
                    SystemCall.result("recv") { recv(fd, space.baseAddress, space.count, Int32(MSG_DONTWAIT | MSG_TRUNC)) }
                }.get()
                rang = true
            } catch where error.errno == Errno(ENOBUFS) {
                rang = true
            } catch {
                break
            }
        }
        return rang
    }
}
