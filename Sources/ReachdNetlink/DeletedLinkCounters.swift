import CNetlink
import ReachdModel

/// A deleted link's last byte counters, from its `RTM_DELLINK` message: the kernel puts the link's statistics
/// (`IFLA_STATS64`, or the 32-bit `IFLA_STATS` of an older kernel) in it, so the bytes a link moved after the last
/// sample and before it went (a PPP link re-dialling, a modem reset) still reach the budgets.
enum DeletedLinkCounters {
    /// Received plus sent bytes of the link `header` deletes, with its name and index; nil for any other message,
    /// or one without a name or counters.
    static func reading(in header: UnsafeMutablePointer<nlmsghdr>) -> CounterReading? {
        let headerLength = MemoryLayout<ifinfomsg>.size
        guard Int32(header.pointee.nlmsg_type) == Int32(RTM_DELLINK), Int(nlmsg_datalen(header)) >= headerLength,
              let payload = nlmsg_data(header) else { return nil }
        let link = payload.loadUnaligned(as: ifinfomsg.self)
        guard link.ifi_family == UInt8(AF_UNSPEC), let name = name(in: header), let bytes = bytes(in: header) else { return nil }
        return CounterReading(interface: name, index: link.ifi_index, bytes: bytes)
    }

    /// `IFLA_IFNAME`: at most `IFNAMSIZ` bytes, ended by a NUL.
    private static func name(in header: UnsafeMutablePointer<nlmsghdr>) -> String? {
        guard let attribute = nlmsg_find_attr(header, Int32(MemoryLayout<ifinfomsg>.size), Int32(IFLA_IFNAME)),
              let data = nla_data(attribute) else { return nil }
        let length = Int(nla_len(attribute))
        guard length > 0, length <= Int(IFNAMSIZ) else { return nil }
        let bytes = UnsafeRawBufferPointer(start: data, count: length).prefix { $0 != 0 }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }

    /// `rx_bytes + tx_bytes`: the third and fourth counters of `rtnl_link_stats64` (or of `rtnl_link_stats`).
    private static func bytes(in header: UnsafeMutablePointer<nlmsghdr>) -> UInt64? {
        let hdrlen = Int32(MemoryLayout<ifinfomsg>.size)
        if let attribute = nlmsg_find_attr(header, hdrlen, Int32(IFLA_STATS64)), let data = nla_data(attribute),
           Int(nla_len(attribute)) >= 4 * MemoryLayout<UInt64>.size {
            let received = data.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
            let sent = data.loadUnaligned(fromByteOffset: 24, as: UInt64.self)
            return received.addingSaturated(sent)
        }
        if let attribute = nlmsg_find_attr(header, hdrlen, Int32(IFLA_STATS)), let data = nla_data(attribute),
           Int(nla_len(attribute)) >= 4 * MemoryLayout<UInt32>.size {
            return UInt64(data.loadUnaligned(fromByteOffset: 8, as: UInt32.self)) + UInt64(data.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
        }
        return nil
    }
}
