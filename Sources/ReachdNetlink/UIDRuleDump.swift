import CNetlink
import ReachdModel

/// The uid ranges of the policy rules (`FRA_UID_RANGE`), read with a dump of every rule (`RTM_GETRULE`) on a socket of
/// its own (a failed dump leaves nothing behind for others to read): libnl's rule objects do not carry them. A dump
/// the kernel says was interrupted (the rules changed meanwhile) is made again.
enum UIDRuleDump {
    /// The ranges of every rule that has one; nil when the dump fails.
    static func ranges() -> UIDRouteRules? {
        guard let socket = try? NetlinkWatcher.openDumpSocket() else { return nil }
        defer { nl_socket_free(socket) }
        for _ in 0..<3 {
            let box = RangesBox()
            let base = nl_socket_get_cb(socket)
            defer { nl_cb_put(base) }
            guard request(on: socket), let callbacks = nl_cb_clone(base) else { return nil }
            defer { nl_cb_put(callbacks) }
            nl_cb_set(callbacks, NL_CB_VALID, NL_CB_CUSTOM, ruleCallback, Unmanaged.passUnretained(box).toOpaque())
            let received = nl_recvmsgs(socket, callbacks)
            if received == -NLE_DUMP_INTR { continue }
            return received < 0 ? nil : UIDRouteRules(ranges: box.ranges)
        }
        return nil
    }

    /// Sends the dump request: a whole `fib_rule_hdr`, as the socket's strict checking wants.
    private static func request(on socket: OpaquePointer) -> Bool {
        guard let message = nlmsg_alloc_simple(Int32(RTM_GETRULE), NLM_F_DUMP) else { return false }
        defer { nlmsg_free(message) }
        var header = fib_rule_hdr()
        header.family = UInt8(AF_UNSPEC)
        return nlmsg_append(message, &header, MemoryLayout<fib_rule_hdr>.size, Int32(NLMSG_ALIGNTO)) == 0 && nl_send_auto(socket, message) >= 0
    }
}

private final class RangesBox {
    var ranges: [ClosedRange<UInt32>] = []
}

/// Takes the uid range of one rule message, if it has one (`struct fib_rule_uid_range`: start, end).
private let ruleCallback: nl_recvmsg_msg_cb_t = { message, context in
    guard let message, let context, let header = nlmsg_hdr(message),
          let attribute = nlmsg_find_attr(header, Int32(MemoryLayout<fib_rule_hdr>.size), Int32(FRA_UID_RANGE)),
          nla_len(attribute) >= Int32(MemoryLayout<fib_rule_uid_range>.size), let data = nla_data(attribute) else {
        return Int32(NL_OK.rawValue)
    }
    let start = data.loadUnaligned(as: UInt32.self), end = data.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
    if start <= end { Unmanaged<RangesBox>.fromOpaque(context).takeUnretainedValue().ranges.append(start...end) }
    return Int32(NL_OK.rawValue)
}
