import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// A classic BPF socket filter for a netlink socket subscribed to the route groups: it keeps route messages
/// about default routes (`rtm_dst_len` 0) and every message that is not about a route, and drops the others
/// in the kernel, before they are queued. A BGP feed replacing thousands of routes a second then neither wakes
/// the socket nor overflows it. (Each route notification is a datagram of its own, one message long.)
enum DefaultRouteFilter {
    /// `nlmsghdr.nlmsg_type`, and `rtmsg.rtm_dst_len` right after the 16-byte header.
    private static let typeOffset: UInt32 = 4
    private static let destinationLengthOffset: UInt32 = 17

    /// The program. BPF loads a half-word in network byte order, so the host-order message types are compared
    /// as they read that way.
    static var program: [sock_filter] {
        let newRoute = UInt32(UInt16(RTM_NEWROUTE).bigEndian)
        let deleteRoute = UInt32(UInt16(RTM_DELROUTE).bigEndian)
        let accept: UInt32 = 0xFFFF_FFFF
        return [
            statement(BPF_LD | BPF_H | BPF_ABS, typeOffset),
            jump(BPF_JMP | BPF_JEQ | BPF_K, newRoute, ifTrue: 2, ifFalse: 0),
            jump(BPF_JMP | BPF_JEQ | BPF_K, deleteRoute, ifTrue: 1, ifFalse: 0),
            statement(BPF_RET | BPF_K, accept),
            statement(BPF_LD | BPF_B | BPF_ABS, destinationLengthOffset),
            jump(BPF_JMP | BPF_JEQ | BPF_K, 0, ifTrue: 0, ifFalse: 1),
            statement(BPF_RET | BPF_K, accept),
            statement(BPF_RET | BPF_K, 0),
        ]
    }

    /// Attaches the filter to a socket (`SO_ATTACH_FILTER`).
    static func attach(to fd: Int32) throws(NetlinkError) {
        var instructions = program
        let rc = instructions.withUnsafeMutableBufferPointer { buffer in
            var fprog = sock_fprog(len: UInt16(buffer.count), filter: buffer.baseAddress)
            return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, socklen_t(MemoryLayout<sock_fprog>.size))
        }
        guard rc == 0 else { throw NetlinkError(call: "setsockopt(SO_ATTACH_FILTER)", code: -nl_syserr2nlerr(errno)) }
    }

    private static func statement(_ code: Int32, _ k: UInt32) -> sock_filter {
        sock_filter(code: UInt16(code), jt: 0, jf: 0, k: k)
    }

    private static func jump(_ code: Int32, _ k: UInt32, ifTrue: UInt8, ifFalse: UInt8) -> sock_filter {
        sock_filter(code: UInt16(code), jt: ifTrue, jf: ifFalse, k: k)
    }
}
