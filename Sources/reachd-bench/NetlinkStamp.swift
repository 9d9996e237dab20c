import CNetlink
import ReachdModel
#if canImport(Glibc)
import Glibc
#endif

/// From linux/rtnetlink.h and linux/if.h (spelled out: Swift imports their enums with differing types).
private let rtmNewLink: UInt16 = 16, rtmNewRoute: UInt16 = 24, rtmDelRoute: UInt16 = 25
private let groupLink: UInt32 = 0x1, groupIPv4Route: UInt32 = 0x40, lowerUp: UInt32 = 0x10000, mainTable: UInt8 = 254

/// The latency floor: a raw rtnetlink socket (what `ip monitor` reads) in the benchmark's own process, which
/// notes when the kernel's message about a change arrives. reachd's event is timed from that moment.
final class NetlinkStamp {
    /// The message that carries a change the benchmark made.
    enum Change {
        /// `RTM_NEWLINK` for the link with this index, with its carrier (`IFF_LOWER_UP`) as given.
        case carrier(index: Int32, up: Bool)
        /// `RTM_NEWROUTE` (added) or `RTM_DELROUTE` (deleted) for an IPv4 default route of the main table.
        case defaultRoute(added: Bool)
    }

    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 65536)

    init() throws {
        fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), NETLINK_ROUTE)
        guard fd >= 0 else { throw BenchError("netlink socket: errno \(errno)") }
        var address = sockaddr_nl()
        address.nl_family = sa_family_t(AF_NETLINK)
        address.nl_groups = groupLink | groupIPv4Route
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size)) }
        }
        guard bound == 0 else { close(fd); throw BenchError("netlink bind: errno \(errno)") }
    }

    deinit { close(fd) }

    /// Drops the messages already queued (changes before the one to be timed).
    func drain() {
        while buffer.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
    }

    /// Waits (up to 10 s) for the message that carries `change`; returns the monotonic time it was read.
    func arrival(of change: Change) throws -> Double {
        let deadline = MonotonicClock.seconds() + 10
        while MonotonicClock.seconds() < deadline {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 1000) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            let time = MonotonicClock.seconds()
            guard count > 0 else { continue }
            if carries(change, Array(buffer.prefix(count))) { return time }
        }
        throw BenchError("no netlink message for \(change) within 10 s")
    }

    /// Whether one of the messages in `bytes` is `change`.
    private func carries(_ change: Change, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset + 16 <= bytes.count {
            let length = Int(u32(bytes, offset))
            let type = u16(bytes, offset + 4)
            guard length >= 16, offset + length <= bytes.count else { return false }
            let body = offset + 16
            switch change {
            case .carrier(let index, let up) where type == rtmNewLink && length >= 32:
                // struct ifinfomsg: family, pad, type (2), index (4), flags (4), change (4).
                let flags = u32(bytes, body + 8)
                if Int32(bitPattern: u32(bytes, body + 4)) == index, ((flags & lowerUp) != 0) == up { return true }
            case .defaultRoute(let added) where type == (added ? rtmNewRoute : rtmDelRoute) && length >= 28:
                // struct rtmsg: family, dst_len, src_len, tos, table, ...
                if bytes[body] == UInt8(AF_INET), bytes[body + 1] == 0, bytes[body + 4] == mainTable { return true }
            default:
                break
            }
            offset += (length + 3) & ~3
        }
        return false
    }

    private func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
    }

    private func u16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
}
