import CNetlink
import ReachdModel
#if canImport(Glibc)
import Glibc
#endif

/// Asks the kernel which route a packet to a destination would take (`RTM_GETROUTE`, as `ip route get`),
/// so that policy rules, tables and reject routes decide exactly as for real traffic. No packet is sent.
///
/// Many destinations are asked in batches: the requests of a batch are sent back to back and the answers,
/// matched by sequence number, read afterwards. One netlink socket, used by one thread at a time
/// (callers serialise).
public final class RouteLookup {
    /// Requests in flight at once; their answers must fit the socket's receive buffer.
    private static let batchSize = 128

    private let socket: OpaquePointer

    /// Opens the socket in the calling thread's network namespace.
    public init() throws {
        guard let socket = nl_socket_alloc() else { throw NetlinkError(call: "nl_socket_alloc", code: NLE_NOMEM) }
        let rc = nl_connect(socket, NETLINK_ROUTE)
        guard rc == 0 else {
            nl_socket_free(socket)
            throw NetlinkError(call: "nl_connect", code: rc)
        }
        // One request, one answer (a route or an error): no extra ACK; answers are matched by sequence.
        nl_socket_disable_auto_ack(socket)
        nl_socket_disable_seq_check(socket)
        // A lost answer must not hang the caller: give up on a read after a second.
        let fd = nl_socket_get_fd(socket)
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        NetlinkSocketOptions.enlargeReceiveBuffer(fd: fd, to: 1 << 20)
        self.socket = socket
    }

    deinit { nl_socket_free(socket) }

    /// The kernel's answer for `destination`.
    public func lookup(_ destination: IPAddress) -> RouteDecision {
        lookup([destination])[0]
    }

    /// The kernel's answers for `destinations`, in the same order; for packets of `uid` (`RTA_UID`, which rules with a
    /// uid range select by), else of this process's user. Each destination gets its own answer: a
    /// refusal (reject route, no route) answers only its own request. A question that went unanswered (no
    /// answer within a second, a send or read failure) is asked once more before it is given as `.failed`.
    public func lookup(_ destinations: [IPAddress], uid: UInt32? = nil) -> [RouteDecision] {
        var results = lookupInBatches(destinations, uid: uid)
        let unanswered = results.indices.filter { !results[$0].isAnswer }
        if !unanswered.isEmpty {
            for (index, decision) in zip(unanswered, lookupInBatches(unanswered.map { destinations[$0] }, uid: uid)) {
                results[index] = decision
            }
        }
        return results
    }

    private func lookupInBatches(_ destinations: [IPAddress], uid: UInt32?) -> [RouteDecision] {
        var results: [RouteDecision] = []
        results.reserveCapacity(destinations.count)
        var start = 0
        while start < destinations.count {
            let batch = destinations[start..<min(start + Self.batchSize, destinations.count)]
            results += lookupBatch(Array(batch), uid: uid)
            start += batch.count
        }
        return results
    }

    private func lookupBatch(_ destinations: [IPAddress], uid: UInt32?) -> [RouteDecision] {
        let answers = AnswerBox()
        for (index, destination) in destinations.enumerated() {
            switch send(destination, uid: uid) {
            case .success(let sequence): answers.pending[sequence] = index
            case .failure(let code): answers.results[index] = .failed(errno: code)
            }
        }
        let base = nl_socket_get_cb(socket)
        defer { nl_cb_put(base) }
        guard let callbacks = nl_cb_clone(base) else {
            return destinations.indices.map { answers.results[$0] ?? .failed(errno: ENOMEM) }
        }
        defer { nl_cb_put(callbacks) }
        let context = Unmanaged.passUnretained(answers).toOpaque()
        nl_cb_set(callbacks, NL_CB_VALID, NL_CB_CUSTOM, routeAnswerCallback, context)
        nl_cb_err(callbacks, NL_CB_CUSTOM, routeErrorCallback, context)
        while !answers.pending.isEmpty {
            // Each call reads what one receive brings; the callbacks skip past every message (an error
            // message too), so one refusal never ends the read. Answers to requests of an earlier batch that
            // gave up on them are not pending and are dropped. Only a read that waited a second for nothing
            // (or a broken socket) ends the batch.
            let received = nl_recvmsgs(socket, callbacks)
            if received < 0, received != -NLE_NOMEM, received != -NLE_MSG_TRUNC, received != -NLE_DUMP_INTR { break }
        }
        return destinations.indices.map { answers.results[$0] ?? .failed(errno: ETIMEDOUT) }
    }

    /// Sends one request; its sequence number, or an errno.
    private func send(_ destination: IPAddress, uid: UInt32?) -> SendResult {
        guard let message = nlmsg_alloc_simple(Int32(RTM_GETROUTE), 0) else { return .failure(ENOMEM) }
        defer { nlmsg_free(message) }
        var header = rtmsg()
        header.rtm_family = UInt8(destination.family == .ipv4 ? AF_INET : AF_INET6)
        header.rtm_dst_len = UInt8(destination.bytes.count * 8)
        guard nlmsg_append(message, &header, MemoryLayout<rtmsg>.size, Int32(NLMSG_ALIGNTO)) == 0,
              destination.bytes.withUnsafeBytes({ nla_put(message, Int32(RTA_DST.rawValue), Int32($0.count), $0.baseAddress) }) == 0,
              uid.map({ nla_put_u32(message, Int32(RTA_UID.rawValue), $0) }) ?? 0 == 0
        else { return .failure(ENOMEM) }
        guard nl_send_auto(socket, message) >= 0, let sent = nlmsg_hdr(message) else { return .failure(EIO) }
        return .success(sent.pointee.nlmsg_seq)
    }

    private enum SendResult {
        case success(UInt32)
        case failure(Int32)
    }
}

private final class AnswerBox {
    /// Sequence number -> index of the destination still waiting for its answer.
    var pending: [UInt32: Int] = [:]
    var results: [Int: RouteDecision] = [:]

    func answer(sequence: UInt32, _ decision: RouteDecision) {
        guard let index = pending.removeValue(forKey: sequence) else { return }
        results[index] = decision
    }
}

private let routeAnswerCallback: nl_recvmsg_msg_cb_t = { message, context in
    guard let message, let context, let header = nlmsg_hdr(message) else { return Int32(NL_SKIP.rawValue) }
    let box = Unmanaged<AnswerBox>.fromOpaque(context).takeUnretainedValue()
    let sequence = header.pointee.nlmsg_seq
    var route: OpaquePointer?
    guard rtnl_route_parse(header, &route) == 0, let route else {
        box.answer(sequence: sequence, .failed(errno: EPROTO))
        return Int32(NL_SKIP.rawValue)
    }
    defer { rtnl_route_put(route) }
    let hop = rtnl_route_get_nnexthops(route) > 0 ? rtnl_route_nexthop_n(route, 0) : nil
    box.answer(sequence: sequence, .route(
        type: RouteType(rawValue: rtnl_route_get_type(route)) ?? .unspecified,
        interfaceIndex: hop.map { Int32(rtnl_route_nh_get_ifindex($0)) } ?? 0,
        gateway: hop.flatMap { LibnlObjects.address(rtnl_route_nh_get_gateway($0)) },
        source: LibnlObjects.address(rtnl_route_get_pref_src(route))
    ))
    return Int32(NL_SKIP.rawValue)
}

/// A refusal answers its own request only: `NL_SKIP` goes on to the next message, where `NL_STOP` would make
/// `nl_recvmsgs` return the refusal itself and end the read.
private let routeErrorCallback: nl_recvmsg_err_cb_t = { _, error, context in
    guard let error, let context else { return Int32(NL_SKIP.rawValue) }
    Unmanaged<AnswerBox>.fromOpaque(context).takeUnretainedValue()
        .answer(sequence: error.pointee.msg.nlmsg_seq, .refused(errno: -error.pointee.error))
    return Int32(NL_SKIP.rawValue)
}
