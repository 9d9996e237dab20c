/// Where reachd may connect for an announced captive-portal API. Any host on the link can announce one
/// (RA option 37, DHCP option 114), so an announcement must not make reachd talk to itself or to what only
/// a neighbour's address could reach: loopback, unspecified, link-local, multicast or broadcast addresses,
/// and the host's own addresses, are refused (IPv4-mapped IPv6 addresses as their IPv4 address).
public enum CaptivePortalTarget {
    /// The address to connect to, or why there is none.
    public enum Choice: Hashable, Sendable {
        /// The first of the candidates that is not refused.
        case connect(IPAddress)
        /// Every candidate is refused (or there is none): why, naming them.
        case refused(String)
    }

    /// The first address of `candidates` (the URL's IP literal, or the name's addresses in the order they
    /// are tried) that `refusal(of:ownAddresses:)` accepts.
    public static func choose(from candidates: [IPAddress], ownAddresses: Set<IPAddress>) -> Choice {
        var reasons: [String] = []
        for address in candidates {
            guard let why = refusal(of: address, ownAddresses: ownAddresses) else { return .connect(address) }
            if reasons.count < 4 { reasons.append("\(address) is \(why)") }
        }
        guard !reasons.isEmpty else { return .refused("no address") }
        let more = candidates.count > reasons.count ? " (and \(candidates.count - reasons.count) more)" : ""
        return .refused(reasons.joined(separator: ", ") + more)
    }

    /// Why `address` is refused (e.g. `loopback`), or nil when reachd may connect to it.
    public static func refusal(of address: IPAddress, ownAddresses: Set<IPAddress>) -> String? {
        let bytes = address.bytes
        if bytes.count == 16, bytes.prefix(10).allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff,
           let v4 = IPAddress(bytes: Array(bytes.suffix(4))) {
            return refusal(of: v4, ownAddresses: ownAddresses)
        }
        if let range = specialRange(bytes) { return range }
        return ownAddresses.contains(address) ? "an address of this host" : nil
    }

    /// The kind of address no announcement may name, or nil for an ordinary one.
    private static func specialRange(_ bytes: [UInt8]) -> String? {
        if bytes.count == 16 {
            if bytes.allSatisfy({ $0 == 0 }) { return "unspecified" }
            if bytes.prefix(15).allSatisfy({ $0 == 0 }), bytes[15] == 1 { return "loopback" }
            if bytes[0] == 0xfe, bytes[1] & 0xc0 == 0x80 { return "link-local" }
            if bytes[0] == 0xff { return "multicast" }
            return nil
        }
        if bytes[0] == 0 { return "unspecified (0.0.0.0/8)" }
        if bytes[0] == 127 { return "loopback" }
        if bytes[0] == 169, bytes[1] == 254 { return "link-local" }
        if bytes[0] & 0xf0 == 0xe0 { return "multicast" }
        if bytes.allSatisfy({ $0 == 0xff }) { return "broadcast" }
        return nil
    }
}

extension NetworkSnapshot {
    /// Every address configured on this host's interfaces.
    public var ownAddresses: Set<IPAddress> { Set(addresses.map(\.address)) }
}
