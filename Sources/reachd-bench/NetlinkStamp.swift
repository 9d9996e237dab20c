import CNetlink
import ReachdModel
import ReachdSystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// From linux/rtnetlink.h and linux/if.h (spelled out: Swift imports their enums with differing types).
private let rtmNewLink: UInt16 = 16, rtmNewRoute: UInt16 = 24, rtmDelRoute: UInt16 = 25
private let groupLink: UInt32 = 0x1, groupIPv4Route: UInt32 = 0x40, lowerUp: UInt32 = 0x10000, mainTable: UInt8 = 254

/// The latency floor: a raw rtnetlink socket (what `ip monitor` reads) read by a thread of its own, asleep in
/// `recv` as `ip monitor` is, which notes when the kernel's message about each change wakes it. reachd's event is
/// timed from that moment (and stamped when its line is read, before it is decoded), so neither side waits for
/// the other's work.
final class NetlinkStamp: @unchecked Sendable {
    /// The message that carries a change the benchmark made.
    enum Change: Sendable {
        /// `RTM_NEWLINK` for the link with this index, with its carrier (`IFF_LOWER_UP`) as given.
        case carrier(index: Int32, up: Bool)
        /// `RTM_NEWROUTE` (added) or `RTM_DELROUTE` (deleted) for an IPv4 default route of the main table.
        case defaultRoute(added: Bool)
    }

    private let fd: Int32
    /// A pipe the reader thread writes a byte to after each message (`noted`), which `arrival` waits on (`notice`).
    private let notice: Int32, noted: Int32
    /// Each message's bytes and the monotonic time its `recv` returned, since the last `drain`.
    private let arrivals = Mutex<[(time: Double, bytes: [UInt8])]>([])

    init() throws {
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), NETLINK_ROUTE)
        guard fd >= 0 else { throw BenchError("netlink socket: errno \(errno)") }
        var address = sockaddr_nl()
        address.nl_family = sa_family_t(AF_NETLINK)
        address.nl_groups = groupLink | groupIPv4Route
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size)) }
        }
        var ends: [Int32] = [-1, -1]
        guard bound == 0, pipe(&ends) == 0 else { close(fd); throw BenchError("netlink bind or pipe: errno \(errno)") }
        (self.fd, notice, noted) = (fd, ends[0], ends[1])
        try DetachedThread.start { [self] in readForever() }
    }

    /// The reader thread: each message, stamped as `recv` returns (the bench ends with its process).
    private func readForever() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            let time = MonotonicClock.seconds()
            guard count > 0 else { continue }
            arrivals.withLock { $0.append((time, Array(buffer.prefix(count)))) }
            var one: UInt8 = 1
            _ = write(noted, &one, 1)
        }
    }

    /// Forgets the messages already read (changes before the one to be timed).
    func drain() {
        arrivals.withLock { $0.removeAll() }
    }

    /// Waits (up to 10 s) for the message that carries `change`; returns the monotonic time it woke the reader.
    func arrival(of change: Change) throws -> Double {
        let deadline = MonotonicClock.seconds() + 10
        while MonotonicClock.seconds() < deadline {
            let seen = arrivals.withLock { $0.first { carries(change, $0.bytes) }?.time }
            if let seen { return seen }
            var entry = pollfd(fd: notice, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 1000) > 0 else { continue }
            var bytes = [UInt8](repeating: 0, count: 64)
            _ = read(notice, &bytes, bytes.count)
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
