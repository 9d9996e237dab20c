/// What a Wi-Fi network's beacon says about its cost, read from two vendor-specific elements wherever they stand in
/// the list, each by its own length.
///
/// **Microsoft's Network Cost element** (OUI 00:50:F2, OUI type 0x11; Microsoft's "Network cost information
/// element", windows-driver-docs `mobilebroadband/network-cost-information-element.md`). After the OUI and type comes
/// the cost attribute, a 4-byte little-endian `NLM_CONNECTION_COST` (the element's length is 8):
///
/// | body bytes | field |
/// | --- | --- |
/// | 0–2 | OUI 00 50 F2 |
/// | 3 | OUI type 0x11 |
/// | 4–5 | cost level, exactly one of 0x0001 unrestricted, 0x0002 fixed, 0x0004 variable |
/// | 6–7 | cost flags: 0x0001 over data limit, 0x0002 congested, 0x0004 roaming, 0x0008 approaching data limit |
///
/// So Android hotspots that send it (`DD 08 00 50 F2 11 02 00 00 00`, Samsung's and MediaTek's firmware) say
/// "fixed". An element shorter than 8 bytes, or whose level is not exactly one of the three (0 is "unknown"),
/// gives no hint; bytes after the attribute are ignored; the first readable element counts. NetworkManager
/// (`nm_wifi_utils_parse_ies`, src/core/nm-core-utils.c, citing Microsoft's [MS-NCT]) matches the element only when
/// the buffer left after its header is 8 bytes long, that is when it comes last, and calls any level byte above 1
/// metered (an older version read body byte 7, the flags' high byte).
///
/// **Apple's Personal Hotspot element** (OUI 00:17:F2, OUI type 0x06, any payload): an iPhone's hotspot beacon
/// carries `DD 0A 00 17 F2 06` and six bytes (`01 01 03 03 00 00` in one capture), which macOS reads as `IOS_IE`
/// and shows as a personal hotspot (reverseengineering.stackexchange.com question 31710; OpenWrt users add the
/// element to their access points to be taken for one).
/// ChromeOS's shill (shill/tethering.cc `kIosOui`, shill/wifi/wifi_endpoint.cc) guesses tethering from any
/// 00:17:F2 element and a locally administered BSSID; reachd matches the type seen in hotspot beacons, whatever the
/// BSSID.
public struct WifiHints: Hashable, Sendable {
    /// The Network Cost element's cost (its congested flag is not kept); nil without a readable element.
    public var networkCost: ConnectionCost?
    /// The list carries Apple's Personal Hotspot element.
    public var applePersonalHotspot: Bool

    public init(networkCost: ConnectionCost? = nil, applePersonalHotspot: Bool = false) {
        self.networkCost = networkCost
        self.applePersonalHotspot = applePersonalHotspot
    }

    /// The hints of a parsed list.
    public init(_ list: WifiElements) {
        var networkCost: ConnectionCost?
        var applePersonalHotspot = false
        for element in list.elements {
            if networkCost == nil, let attribute = element.vendorPayload(oui: (0x00, 0x50, 0xF2), type: 0x11) {
                networkCost = Self.cost(attribute)
            }
            if element.vendorPayload(oui: (0x00, 0x17, 0xF2), type: 0x06) != nil {
                applePersonalHotspot = true
            }
        }
        self.init(networkCost: networkCost, applePersonalHotspot: applePersonalHotspot)
    }

    /// The hints as a metered state, nil when neither element is there. The network sends them unasked and
    /// unauthenticated, so they are guesses, as DHCP's `ANDROID_METERED` is: a Network Cost of fixed or variable is
    /// `guess-yes` and unrestricted `guess-no`, whatever its flags (over a limit but unrestricted is a throttled
    /// link, Microsoft's example); without one, an Apple hotspot is `guess-yes`. The Network Cost element decides
    /// when both are there: it states the cost, the Apple element only tells what sends the beacon.
    public var meteredState: MeteredState? {
        if let networkCost { return networkCost.level == .unrestricted ? .guessNo : .guessYes }
        return applePersonalHotspot ? .guessYes : nil
    }

    /// What the hints are, for a reason: `Network Cost fixed`, `Apple Personal Hotspot`, or both.
    public var description: String {
        var parts = networkCost.map { ["Network Cost \($0.level.rawValue)"] } ?? []
        if applePersonalHotspot { parts.append("Apple Personal Hotspot") }
        return parts.joined(separator: ", ")
    }

    /// The cost attribute (the body after OUI and type), little-endian; nil when short or of no known level.
    private static func cost(_ attribute: ArraySlice<UInt8>) -> ConnectionCost? {
        guard attribute.count >= 4 else { return nil }
        let bytes = Array(attribute.prefix(4))
        let level: CostLevel
        switch UInt16(bytes[0]) | UInt16(bytes[1]) << 8 {
        case 0x0001: level = .unrestricted
        case 0x0002: level = .fixed
        case 0x0004: level = .variable
        default: return nil
        }
        let flags = UInt16(bytes[2]) | UInt16(bytes[3]) << 8
        return ConnectionCost(
            level: level, roaming: flags & 0x0004 != 0, approachingDataLimit: flags & 0x0008 != 0,
            overDataLimit: flags & 0x0001 != 0)
    }
}
