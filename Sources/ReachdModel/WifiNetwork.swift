/// Which daemon runs a Wi-Fi link and says which network it joined.
public enum WifiDaemon: String, Hashable, Sendable, CaseIterable {
    case iwd
    case wpaSupplicant = "wpa_supplicant"
}

/// Which Wi-Fi network a link is on: the SSID's bytes and, when the daemon says, the access point's BSSID.
public struct WifiIdentity: Hashable, Sendable {
    /// The SSID, 1 to 32 bytes (IEEE 802.11): arbitrary bytes, often but not always UTF-8.
    public let ssid: [UInt8]
    /// The BSSID, six bytes; nil when the daemon did not say.
    public let bssid: [UInt8]?

    /// Longest SSID (IEEE 802.11).
    public static let maximumSSIDLength = 32

    /// nil when `ssid` is empty or over 32 bytes, or `bssid` is not six bytes.
    public init?(ssid: [UInt8], bssid: [UInt8]? = nil) {
        guard (1...Self.maximumSSIDLength).contains(ssid.count), bssid.map({ $0.count == 6 }) ?? true else { return nil }
        self.ssid = ssid
        self.bssid = bssid
    }

    /// The SSID as text: itself when it is UTF-8 without a backslash or an ASCII control character (NUL, ESC, DEL
    /// ...); otherwise every byte that is not printable ASCII written `\xNN` and a backslash `\\`, so that two
    /// different SSIDs never read the same and a C string (D-Bus) never cuts one short.
    public var name: String {
        if !ssid.contains(where: { $0 == UInt8(ascii: "\\") || $0 < 0x20 || $0 == 0x7F }),
           let text = String(validating: ssid, as: UTF8.self) { return text }
        var text = ""
        for byte in ssid {
            switch byte {
            case UInt8(ascii: "\\"): text += "\\\\"
            case 0x20..<0x7F: text.unicodeScalars.append(Unicode.Scalar(byte))
            default: text += "\\x" + Self.hex(byte)
            }
        }
        return text
    }

    /// The SSID whose `name` is `name` (its escapes undone); nil for text that is no SSID's name.
    public static func ssid(name: String) -> [UInt8]? {
        guard let bytes = unescaped(name), WifiIdentity(ssid: bytes)?.name == name else { return nil }
        return bytes
    }

    private static func unescaped(_ name: String) -> [UInt8]? {
        let text = Array(name.utf8)
        var bytes: [UInt8] = []
        var index = 0
        while index < text.count {
            guard text[index] == UInt8(ascii: "\\") else {
                bytes.append(text[index])
                index += 1
                continue
            }
            if index + 1 < text.count, text[index + 1] == UInt8(ascii: "\\") {
                bytes.append(UInt8(ascii: "\\"))
                index += 2
            } else if index + 3 < text.count, text[index + 1] == UInt8(ascii: "x"),
                      let byte = Self.bytes(hex: String(decoding: text[(index + 2)...(index + 3)], as: UTF8.self))?.first {
                bytes.append(byte)
                index += 4
            } else {
                return nil
            }
        }
        return bytes
    }

    /// The SSID's bytes in hex, lowercase (`ssidHex` on the wire: exact whatever the bytes are).
    public var ssidHex: String { Self.hex(ssid) }

    /// Bytes in hex, lowercase.
    public static func hex(_ bytes: [UInt8]) -> String { bytes.map(hex).joined() }

    /// The BSSID as `aa:bb:cc:dd:ee:ff`.
    public var bssidText: String? { bssid.map(Self.text(bssid:)) }

    /// Bytes as `aa:bb:cc:dd:ee:ff`.
    public static func text(bssid: [UInt8]) -> String { bssid.map(hex).joined(separator: ":") }

    /// Six bytes from `aa:bb:cc:dd:ee:ff` (either case); nil for anything else.
    public static func bssid(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6, parts.allSatisfy({ $0.utf8.count == 2 }) else { return nil }
        let bytes = parts.compactMap { Self.bytes(hex: String($0))?.first }
        return bytes.count == 6 ? bytes : nil
    }

    /// Bytes from lowercase or uppercase hex of even length; nil for anything else.
    public static func bytes(hex text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef".unicodeScalars)
        return String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0F)])
    }
}

/// The Wi-Fi network a link has joined, with what its beacon hints, as iwd or wpa_supplicant says.
public struct WifiNetwork: Hashable, Sendable {
    public var identity: WifiIdentity
    /// The cost hints of the beacon's elements (wpa_supplicant's BSS `IEs`; iwd gives none).
    public var hints: WifiHints
    public var daemon: WifiDaemon

    public init(identity: WifiIdentity, hints: WifiHints = WifiHints(), daemon: WifiDaemon) {
        self.identity = identity
        self.hints = hints
        self.daemon = daemon
    }
}

/// A `[[network]]` rule: a Wi-Fi network named by its SSID, its BSSID or both, and what to say of it.
public struct NetworkRule: Hashable, Sendable {
    /// The SSID's bytes; nil: any SSID.
    public var ssid: [UInt8]?
    /// The BSSID; nil: any access point.
    public var bssid: [UInt8]?
    /// Overrides the detected kind while a link is on this network.
    public var kind: InterfaceKind?
    /// Overrides whether a link on this network is metered, above every other source.
    public var metered: Bool?
    /// reachd acts as if a link on this network did not exist.
    public var ignore: Bool

    public init(ssid: [UInt8]? = nil, bssid: [UInt8]? = nil, kind: InterfaceKind? = nil, metered: Bool? = nil, ignore: Bool = false) {
        self.ssid = ssid
        self.bssid = bssid
        self.kind = kind
        self.metered = metered
        self.ignore = ignore
    }

    /// Whether the rule names `network`: every part it gives matches (a rule with neither matches nothing).
    public func matches(_ network: WifiIdentity) -> Bool {
        guard ssid != nil || bssid != nil else { return false }
        return (ssid.map { $0 == network.ssid } ?? true) && (bssid.map { $0 == network.bssid } ?? true)
    }

    /// How reasons name the rule: `ssid "Home"`, `bssid 02:00:00:00:00:01`, or both.
    public var label: String {
        var parts: [String] = []
        if let ssid, let identity = WifiIdentity(ssid: ssid) { parts.append("ssid \"\(identity.name)\"") }
        if let bssid { parts.append("bssid " + WifiIdentity.text(bssid: bssid)) }
        return parts.joined(separator: " ")
    }
}
