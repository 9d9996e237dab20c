/// The information elements of the beacon or probe response a Wi-Fi network last sent, as wpa_supplicant gives
/// them in a BSS's `IEs` property (D-Bus `ay`): elements one after another, each an `id` byte, a `length` byte and
/// `length` bytes of body.
///
/// Any transmitter on the channel chooses these bytes, so they are read as hostile input: the parser never traps,
/// allocates at most the input's size in element bodies, and reads each element by its own length. A last element
/// that the input cuts short (a lone id byte, or a length running past the end) ends the list: the elements before
/// it are kept and `truncatedBytes` says how many bytes were left over. Nothing is interpreted here; `hints` reads
/// the vendor-specific elements reachd uses (`WifiHints`). The SSID element (id 0) is kept like any other, unread:
/// the network's name comes from the BSS's `SSID` property.
public struct WifiElements: Hashable, Sendable {
    /// The whole elements, in the order they stand.
    public var elements: [WifiElement]
    /// The bytes after the last whole element: 0 when the list ends cleanly, else 1 (an id without a length) up to
    /// 256 (an id, a length and fewer body bytes than it says).
    public var truncatedBytes: Int

    public init(elements: [WifiElement] = [], truncatedBytes: Int = 0) {
        self.elements = elements
        self.truncatedBytes = truncatedBytes
    }

    /// Largest input read (4096 bytes); larger is `.oversized`, refused whole rather than cut (a cut would make a
    /// well-formed list look truncated). wpa_supplicant's lists are a few hundred bytes, a few KiB at most.
    public static let maximumSize = 4096

    /// Splits `bytes` into elements (see the type's description). Fails only on input over `maximumSize`.
    public static func parse(_ bytes: [UInt8]) -> Result<WifiElements, WifiElementsProblem> {
        guard bytes.count <= maximumSize else { return .failure(.oversized(bytes.count)) }
        var elements: [WifiElement] = []
        var start = 0
        while bytes.count - start >= 2 {
            let bodyStart = start + 2
            let length = Int(bytes[start + 1])
            guard bytes.count - bodyStart >= length else { break }
            elements.append(WifiElement(id: bytes[start], body: Array(bytes[bodyStart..<(bodyStart + length)])))
            start = bodyStart + length
        }
        return .success(WifiElements(elements: elements, truncatedBytes: bytes.count - start))
    }

    /// What the vendor-specific elements say of the network's cost (`WifiHints`).
    public var hints: WifiHints { WifiHints(self) }
}

/// One information element: its id and its body (at most 255 bytes, the length byte's reach).
public struct WifiElement: Hashable, Sendable {
    public var id: UInt8
    public var body: [UInt8]

    public init(id: UInt8, body: [UInt8]) {
        self.id = id
        self.body = body
    }

    /// The id of a vendor-specific element (IEEE 802.11 "Vendor Specific", 0xDD): its body starts with the
    /// vendor's 3-byte OUI, then, by convention, a 1-byte OUI type.
    public static let vendorSpecificID: UInt8 = 221

    /// The body after the OUI and OUI type when this is a vendor-specific element of `oui` and `type`, else nil.
    func vendorPayload(oui: (UInt8, UInt8, UInt8), type: UInt8) -> ArraySlice<UInt8>? {
        guard id == Self.vendorSpecificID, body.count >= 4,
            body[0] == oui.0, body[1] == oui.1, body[2] == oui.2, body[3] == type
        else { return nil }
        return body[4...]
    }
}

/// Why a BSS's information elements gave no list.
public enum WifiElementsProblem: Error, Hashable, Sendable, CustomStringConvertible {
    /// The input is larger than `WifiElements.maximumSize`; the byte count.
    case oversized(Int)

    public var description: String {
        switch self {
        case .oversized(let count): "Wi-Fi information elements too large (\(count) bytes, at most \(WifiElements.maximumSize))"
        }
    }
}
