import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// The default routes (prefix length 0) of every table, kept in a libnl route cache that holds nothing else:
/// the internet verdict needs no other route, and hosts ask the kernel (`RouteLookup`). A full Internet
/// table (a million routes) costs neither memory nor parsing here.
///
/// Changes arrive on a socket of its own, subscribed to the route groups, whose kernel-side filter
/// (`DefaultRouteFilter`) drops every other route message before it is queued: route churn never wakes this
/// socket nor fills it. Each message is parsed by libnl and applied with `nl_cache_include`, as libnl's cache
/// manager does. A dump still walks the whole table (the kernel cannot filter dumps by prefix length), but
/// skips every other route on its netlink header, before anything is parsed or allocated.
final class DefaultRouteTable {
    /// Receive buffer per `nl_recv`: larger than any dump message batch (the kernel caps those at 32 KiB).
    private static let messageBufferSize = 64 << 10
    /// Dumps retried when the kernel says one was interrupted by a change.
    private static let interruptedDumpRetries = 3

    /// The libnl route cache (read with `LibnlObjects`).
    let cache: OpaquePointer
    private let events: OpaquePointer

    /// Subscribes to the route groups (before any dump, so that no change falls between the two).
    init(receiveBufferSize: Int) throws(NetlinkError) {
        var cache: OpaquePointer?
        var rc = nl_cache_alloc_name("route/route", &cache)
        guard rc == 0, let cache else { throw NetlinkError(call: "nl_cache_alloc_name(route/route)", code: rc) }
        guard let events = nl_socket_alloc() else {
            nl_cache_free(cache)
            throw NetlinkError(call: "nl_socket_alloc", code: NLE_NOMEM)
        }
        self.cache = cache
        self.events = events
        nl_socket_disable_seq_check(events)
        nl_socket_disable_msg_peek(events)
        _ = nl_socket_set_msg_buf_size(events, Self.messageBufferSize)
        rc = nl_connect(events, NETLINK_ROUTE)
        guard rc == 0 else { throw NetlinkError(call: "nl_connect", code: rc) }
        let fd = nl_socket_get_fd(events)
        // Filter first: nothing but default routes is ever queued.
        try DefaultRouteFilter.attach(to: fd)
        NetlinkSocketOptions.enlargeReceiveBuffer(fd: fd, to: receiveBufferSize)
        for group in [RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE] {
            rc = nl_socket_add_membership(events, Int32(group.rawValue))
            guard rc == 0 else { throw NetlinkError(call: "nl_socket_add_membership", code: rc) }
        }
        rc = nl_socket_set_nonblocking(events)
        guard rc == 0 else { throw NetlinkError(call: "nl_socket_set_nonblocking", code: rc) }
    }

    deinit {
        nl_cache_free(cache)
        nl_socket_free(events)
    }

    /// The descriptor to poll for route events.
    var fileDescriptor: Int32 { nl_socket_get_fd(events) }

    /// Applies every queued route message; true if any was there. Throws on an overflow (ENOBUFS: messages
    /// were lost, `refill` must follow) or another receive error.
    func receiveEvents() throws(NetlinkError) -> Bool {
        var changed = false
        while true {
            var peer = sockaddr_nl()
            var buffer: UnsafeMutablePointer<UInt8>?
            let length = nl_recv(events, &peer, &buffer, nil)
            defer { free(buffer) }
            if length == -NLE_AGAIN || length == 0 { return changed }
            guard length > 0, let buffer else { throw NetlinkError(call: "nl_recv(route events)", code: length) }
            forEachMessage(buffer, length: length) { header in
                if includeIfDefaultRoute(header) { changed = true }
                return true
            }
        }
    }

    /// Replaces the cache's content by the kernel's default routes, read from one dump through `socket` (a
    /// blocking socket of the caller's, used for nothing else meanwhile).
    func refill(using socket: OpaquePointer) throws(NetlinkError) {
        for _ in 0..<Self.interruptedDumpRetries {
            nl_cache_clear(cache)
            if try !dumpInterrupted(using: socket, through: nil) { return }
        }
    }

    /// Replaces the cached routes that use link `index` by the kernel's, from a dump the kernel filters to
    /// that link: it walks the table without sending the rest. Without strict checking on `socket`
    /// (`NETLINK_GET_STRICT_CHK`, Linux 4.20) the kernel ignores the filter: still right, at a full dump's cost.
    func refresh(link index: Int32, using socket: OpaquePointer) throws(NetlinkError) {
        for _ in 0..<Self.interruptedDumpRetries {
            for route in LibnlObjects.objects(of: cache) where LibnlObjects.route(route, usesInterface: index) {
                nl_cache_remove(route)
            }
            if try !dumpInterrupted(using: socket, through: index) { return }
        }
    }

    /// One dump into the cache (of the routes through link `index` only, if given); true if the kernel
    /// flagged it as interrupted by a concurrent change.
    private func dumpInterrupted(using socket: OpaquePointer, through index: Int32?) throws(NetlinkError) -> Bool {
        let sequence = try sendDumpRequest(on: socket, through: index)
        var interrupted = false
        var finished = false
        var failure: Int32 = 0
        while !finished {
            var peer = sockaddr_nl()
            var buffer: UnsafeMutablePointer<UInt8>?
            let length = nl_recv(socket, &peer, &buffer, nil)
            defer { free(buffer) }
            guard length > 0, let buffer else { throw NetlinkError(call: "nl_recv(route dump)", code: length == 0 ? NLE_FAILURE : length) }
            forEachMessage(buffer, length: length) { header in
                // A previous dump cut short by an error may have left its tail in the socket.
                guard header.pointee.nlmsg_seq == sequence else { return true }
                if header.pointee.nlmsg_flags & UInt16(NLM_F_DUMP_INTR) != 0 { interrupted = true }
                switch Int32(header.pointee.nlmsg_type) {
                case NLMSG_DONE:
                    finished = true
                    return false
                case NLMSG_ERROR:
                    let error = nlmsg_data(header).load(as: nlmsgerr.self).error
                    failure = error == 0 ? -EPROTO : error
                    finished = true
                    return false
                default:
                    _ = includeIfDefaultRoute(header, through: index)
                    return true
                }
            }
        }
        if failure != 0 { throw NetlinkError(call: "RTM_GETROUTE dump", code: -nl_syserr2nlerr(-failure)) }
        return interrupted
    }

    private func sendDumpRequest(on socket: OpaquePointer, through index: Int32?) throws(NetlinkError) -> UInt32 {
        guard let message = nlmsg_alloc_simple(Int32(RTM_GETROUTE), NLM_F_DUMP) else {
            throw NetlinkError(call: "nlmsg_alloc_simple", code: NLE_NOMEM)
        }
        defer { nlmsg_free(message) }
        var header = rtmsg()
        header.rtm_family = UInt8(AF_UNSPEC)
        var rc = nlmsg_append(message, &header, MemoryLayout<rtmsg>.size, Int32(NLMSG_ALIGNTO))
        guard rc == 0 else { throw NetlinkError(call: "nlmsg_append", code: rc) }
        if let index {
            rc = nla_put_u32(message, Int32(RTA_OIF.rawValue), UInt32(bitPattern: index))
            guard rc == 0 else { throw NetlinkError(call: "nla_put_u32(RTA_OIF)", code: rc) }
        }
        rc = nl_send_auto(socket, message)
        guard rc >= 0, let sent = nlmsg_hdr(message) else { throw NetlinkError(call: "nl_send_auto(RTM_GETROUTE dump)", code: rc) }
        return sent.pointee.nlmsg_seq
    }

    /// Calls `body` for each message of a received buffer until it returns false.
    private func forEachMessage(_ buffer: UnsafeMutablePointer<UInt8>, length: Int32,
                                _ body: (UnsafeMutablePointer<nlmsghdr>) -> Bool) {
        var remaining = length
        var header = UnsafeMutableRawPointer(buffer).assumingMemoryBound(to: nlmsghdr.self)
        while nlmsg_ok(header, remaining) != 0, body(header) {
            guard let next = nlmsg_next(header, &remaining) else { return }
            header = next
        }
    }

    /// Parses and applies a route message if it is about a default route (through link `index`, if given);
    /// true if it was.
    private func includeIfDefaultRoute(_ header: UnsafeMutablePointer<nlmsghdr>, through index: Int32? = nil) -> Bool {
        let type = Int32(header.pointee.nlmsg_type)
        guard type == RTM_NEWROUTE || type == RTM_DELROUTE,
              nlmsg_datalen(header) >= MemoryLayout<rtmsg>.size,
              nlmsg_data(header).load(as: rtmsg.self).rtm_dst_len == 0 else { return false }
        var route: OpaquePointer?
        guard rtnl_route_parse(header, &route) == 0, let route else { return false }
        // A kernel without strict checking sends every route: keep to the link asked for.
        if let index, !LibnlObjects.route(route, usesInterface: index) {
            rtnl_route_put(route)
            return false
        }
        // The cache takes its own reference of a new route; a deleted one only names what to remove.
        _ = nl_cache_include(cache, route, nil, nil)
        rtnl_route_put(route)
        return true
    }
}
