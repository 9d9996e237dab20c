import CNetlink
import ReachdModel
#if canImport(Glibc)
import Glibc
#endif

/// Asks the kernel which route a packet to a destination would take (`RTM_GETROUTE`, as `ip route get`),
/// so that policy rules, tables and reject routes decide exactly as for real traffic. No packet is sent.
///
/// One netlink socket, used by one thread at a time (callers serialise).
public final class RouteLookup {
    private let socket: OpaquePointer

    /// Opens the socket in the calling thread's network namespace.
    public init() throws {
        guard let socket = nl_socket_alloc() else { throw NetlinkError(call: "nl_socket_alloc", code: NLE_NOMEM) }
        let rc = nl_connect(socket, NETLINK_ROUTE)
        guard rc == 0 else {
            nl_socket_free(socket)
            throw NetlinkError(call: "nl_connect", code: rc)
        }
        // One request, one answer (a route or an error): no extra ACK to wait for.
        nl_socket_disable_auto_ack(socket)
        self.socket = socket
    }

    deinit { nl_socket_free(socket) }

    /// The kernel's answer for `destination`.
    public func lookup(_ destination: IPAddress) -> RouteDecision {
        let answer = AnswerBox()
        guard let message = nlmsg_alloc_simple(Int32(RTM_GETROUTE), 0) else { return .refused(errno: ENOMEM) }
        defer { nlmsg_free(message) }
        var header = rtmsg()
        header.rtm_family = UInt8(destination.family == .ipv4 ? AF_INET : AF_INET6)
        header.rtm_dst_len = UInt8(destination.bytes.count * 8)
        guard nlmsg_append(message, &header, MemoryLayout<rtmsg>.size, Int32(NLMSG_ALIGNTO)) == 0,
              destination.bytes.withUnsafeBytes({ nla_put(message, Int32(RTA_DST.rawValue), Int32($0.count), $0.baseAddress) }) == 0
        else { return .refused(errno: ENOMEM) }
        guard nl_send_auto(socket, message) >= 0 else { return .refused(errno: EIO) }

        guard let callbacks = nl_cb_clone(nl_socket_get_cb(socket)) else { return .refused(errno: ENOMEM) }
        defer { nl_cb_put(callbacks) }
        let context = Unmanaged.passUnretained(answer).toOpaque()
        nl_cb_set(callbacks, NL_CB_VALID, NL_CB_CUSTOM, routeAnswerCallback, context)
        nl_cb_err(callbacks, NL_CB_CUSTOM, routeErrorCallback, context)
        let rc = nl_recvmsgs(socket, callbacks)
        if let result = answer.result { return result }
        return .refused(errno: rc < 0 ? EIO : ENODATA)
    }
}

private final class AnswerBox {
    var result: RouteDecision?
}

private let routeAnswerCallback: nl_recvmsg_msg_cb_t = { message, context in
    guard let message, let context, let header = nlmsg_hdr(message) else { return Int32(NL_STOP.rawValue) }
    let box = Unmanaged<AnswerBox>.fromOpaque(context).takeUnretainedValue()
    var route: OpaquePointer?
    guard rtnl_route_parse(header, &route) == 0, let route else {
        box.result = .refused(errno: EPROTO)
        return Int32(NL_STOP.rawValue)
    }
    defer { rtnl_route_put(route) }
    let hop = rtnl_route_get_nnexthops(route) > 0 ? rtnl_route_nexthop_n(route, 0) : nil
    box.result = .route(
        type: RouteType(rawValue: rtnl_route_get_type(route)) ?? .unspecified,
        interfaceIndex: hop.map { Int32(rtnl_route_nh_get_ifindex($0)) } ?? 0,
        gateway: hop.flatMap { LibnlObjects.address(rtnl_route_nh_get_gateway($0)) },
        source: LibnlObjects.address(rtnl_route_get_pref_src(route))
    )
    return Int32(NL_STOP.rawValue)
}

private let routeErrorCallback: nl_recvmsg_err_cb_t = { _, error, context in
    guard let error, let context else { return Int32(NL_STOP.rawValue) }
    Unmanaged<AnswerBox>.fromOpaque(context).takeUnretainedValue().result = .refused(errno: -error.pointee.error)
    return Int32(NL_STOP.rawValue)
}
