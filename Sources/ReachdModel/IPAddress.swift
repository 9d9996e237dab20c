#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address held as its network-order bytes.
public struct IPAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The address family.
    public enum Family: String, Hashable, Sendable, Codable, CaseIterable {
        case ipv4
        case ipv6

        /// The address length in bytes.
        public var byteCount: Int { self == .ipv4 ? 4 : 16 }
    }

    /// The address bytes, 4 for IPv4 and 16 for IPv6, network order.
    public let bytes: [UInt8]

    /// Creates an address from 4 or 16 bytes; nil for any other length.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses dotted-quad IPv4 or textual IPv6 (`inet_pton(3)`); nil when it is neither.
    public init?(_ text: String) {
        var buffer = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET, text, &buffer) == 1 {
            self.bytes = Array(buffer.prefix(4))
        } else if inet_pton(AF_INET6, text, &buffer) == 1 {
            self.bytes = buffer
        } else {
            return nil
        }
    }

    public var family: Family { bytes.count == 4 ? .ipv4 : .ipv6 }

    /// The canonical text form (`inet_ntop(3)`, RFC 5952 for IPv6).
    public var description: String {
        var out = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let af = family == .ipv4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeBytes { raw in
            inet_ntop(af, raw.baseAddress, &out, socklen_t(out.count)) != nil
        }
        guard ok else { return "?" }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public static func < (lhs: IPAddress, rhs: IPAddress) -> Bool {
        if lhs.bytes.count != rhs.bytes.count { return lhs.bytes.count < rhs.bytes.count }
        return lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
