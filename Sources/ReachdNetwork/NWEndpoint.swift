import Foundation

/// An address of an endpoint, as in Apple's Network framework (as far as `NWPath.gateways` needs it).
public protocol IPAddress {
    /// The address in network byte order (4 or 16 bytes).
    var rawValue: Data { get }
    /// The interface a link-local address is scoped to, if any.
    var interface: NWInterface? { get }
}

/// An IPv4 address.
public struct IPv4Address: IPAddress, Hashable, CustomDebugStringConvertible, Sendable {
    public let rawValue: Data
    public let interface: NWInterface?

    /// `rawValue`: 4 bytes in network byte order.
    public init?(_ rawValue: Data, _ interface: NWInterface? = nil) {
        guard rawValue.count == 4 else { return nil }
        self.rawValue = rawValue
        self.interface = interface
    }

    /// Dotted-quad text, e.g. `192.0.2.1`.
    public init?(_ string: String) {
        var address = in_addr()
        guard inet_pton(AF_INET, string, &address) == 1 else { return nil }
        self.init(withUnsafeBytes(of: &address) { Data($0) })
    }

    public var debugDescription: String {
        rawValue.map(String.init).joined(separator: ".")
    }
}

/// An IPv6 address.
public struct IPv6Address: IPAddress, Hashable, CustomDebugStringConvertible, Sendable {
    public let rawValue: Data
    public let interface: NWInterface?

    /// `rawValue`: 16 bytes in network byte order.
    public init?(_ rawValue: Data, _ interface: NWInterface? = nil) {
        guard rawValue.count == 16 else { return nil }
        self.rawValue = rawValue
        self.interface = interface
    }

    /// RFC 4291 text, e.g. `2001:db8::1`.
    public init?(_ string: String) {
        var address = in6_addr()
        guard inet_pton(AF_INET6, string, &address) == 1 else { return nil }
        self.init(withUnsafeBytes(of: &address) { Data($0) })
    }

    public var debugDescription: String {
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: rawValue) }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return "::" }
        let scoped = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return interface.map { "\(scoped)%\($0.name)" } ?? scoped
    }
}

/// An endpoint, as in Apple's Network framework: here only a host and a port (what `NWPath.gateways` holds).
public enum NWEndpoint: Hashable, CustomDebugStringConvertible, Sendable {
    /// A host, by name or address, and a port.
    case hostPort(host: Host, port: Port)

    /// A host name or address.
    public enum Host: Hashable, CustomDebugStringConvertible, ExpressibleByStringLiteral, Sendable {
        case name(String, NWInterface?)
        case ipv4(IPv4Address)
        case ipv6(IPv6Address)

        /// An address literal as `.ipv4` or `.ipv6`, anything else as `.name`.
        public init(_ name: String) {
            if let address = IPv4Address(name) {
                self = .ipv4(address)
            } else if let address = IPv6Address(name) {
                self = .ipv6(address)
            } else {
                self = .name(name, nil)
            }
        }

        public init(stringLiteral value: String) { self.init(value) }

        public var debugDescription: String {
            switch self {
            case .name(let name, let interface): interface.map { "\(name)%\($0.name)" } ?? name
            case .ipv4(let address): address.debugDescription
            case .ipv6(let address): address.debugDescription
            }
        }
    }

    /// A port number; gateways have port 0 (`.any`).
    public struct Port: Hashable, CustomDebugStringConvertible, ExpressibleByIntegerLiteral, RawRepresentable, Sendable {
        public let rawValue: UInt16
        /// Port 0.
        public static let any = Port(integerLiteral: 0)

        public init?(rawValue: UInt16) { self.rawValue = rawValue }
        public init(integerLiteral value: UInt16) { rawValue = value }

        /// Decimal text, e.g. `443`.
        public init?(_ port: String) {
            guard let value = UInt16(port) else { return nil }
            rawValue = value
        }

        public var debugDescription: String { String(rawValue) }
    }

    public var debugDescription: String {
        switch self {
        case .hostPort(let host, let port):
            if case .ipv6 = host { return "[\(host.debugDescription)]:\(port.debugDescription)" }
            return "\(host.debugDescription):\(port.debugDescription)"
        }
    }
}
