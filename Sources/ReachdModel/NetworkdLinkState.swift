/// What reachd reads from networkd's link state file `/run/systemd/netif/links/IFINDEX` (`KEY=value` lines, see
/// `EnvFileLines`).
public enum NetworkdLinkState {
    /// The captive-portal API URI networkd ≥ 254 chose from DHCPv4 114, DHCPv6 103 and RA 37 (`CAPTIVE_PORTAL=`),
    /// unjudged (see `CaptivePortalAnnouncement`). Nil when absent, empty, over 2048 bytes, or holding a byte
    /// outside printable ASCII.
    public static func captivePortal(in bytes: [UInt8]) -> String? {
        guard let value = EnvFileLines.lastValue(of: "CAPTIVE_PORTAL", in: bytes), isPrintableASCII(value, upTo: 2048)
        else { return nil }
        return String(decoding: value, as: UTF8.self)
    }
}

/// Non-empty, at most `limit` bytes, each printable ASCII without the space (0x21...0x7e): what a URI may hold.
func isPrintableASCII<Bytes: Collection<UInt8>>(_ bytes: Bytes, upTo limit: Int) -> Bool {
    !bytes.isEmpty && bytes.count <= limit && bytes.allSatisfy { (0x21...0x7e).contains($0) }
}
