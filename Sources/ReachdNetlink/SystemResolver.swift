import ReachdModel
#if canImport(Glibc)
import Glibc
#endif

/// Host-name resolution with `getaddrinfo(3)`, so /etc/hosts, nsswitch and resolv.conf apply exactly as for
/// other programs.
public enum SystemResolver {
    /// Addresses in getaddrinfo's order (RFC 6724), each once; an IP literal is itself. Blocks while the
    /// system resolver works (files, then DNS as nsswitch.conf says).
    public static func resolve(_ name: String) -> Resolution {
        if let literal = IPAddress(name) { return .addresses([literal]) }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = Glibc.getaddrinfo(name, nil, &hints, &list)
        guard rc == 0 else { return .failed(String(cString: gai_strerror(rc))) }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var entry = list
        while let info = entry?.pointee {
            entry = info.ai_next
            guard let raw = info.ai_addr else { continue }
            let address: IPAddress?
            switch info.ai_family {
            case AF_INET:
                address = raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin_addr) { IPAddress(bytes: Array($0)) }
                }
            case AF_INET6:
                address = raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin6_addr) { IPAddress(bytes: Array($0)) }
                }
            default:
                address = nil
            }
            if let address, !addresses.contains(address) { addresses.append(address) }
        }
        return addresses.isEmpty ? .failed("no addresses") : .addresses(addresses)
    }
}
