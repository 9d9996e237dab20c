/// What reachd reads from a networkd DHCPv4 lease file.
///
/// The file is `/run/systemd/netif/leases/IFINDEX`, which networkd calls private data, so it is read tolerantly:
/// systemd 252 to 257 write `KEY=value` lines (see `EnvFileLines`), a later systemd may write one JSON object
/// (`"Vendor_Specific"`, hex), told apart by a first non-blank byte `{`. Only option 43 is read; every other key
/// is ignored, and a lease without option 43 is not a problem.
public struct NetworkdLease: Hashable, Sendable {
    /// Option 43 (vendor-specific information), raw, when the lease has it.
    public var vendorSpecific: [UInt8]?

    public init(vendorSpecific: [UInt8]? = nil) {
        self.vendorSpecific = vendorSpecific
    }

    /// Option 43 contains `ANDROID_METERED` anywhere in its bytes (case-sensitive), as NetworkManager and Android test it.
    public var androidMetered: Bool {
        guard let bytes = vendorSpecific, bytes.count >= Self.androidMeteredMarker.count else { return false }
        return (0...(bytes.count - Self.androidMeteredMarker.count)).contains { start in
            bytes[start..<(start + Self.androidMeteredMarker.count)].elementsEqual(Self.androidMeteredMarker)
        }
    }

    /// Largest file read (64 KiB); larger is `.oversized`.
    public static let maximumSize = 64 * 1024

    /// Most hex digits accepted for option 43: 1024 bytes, room for an option split over several (RFC 3396), far
    /// more than the 255 bytes of one.
    static let maximumHexDigits = 2048

    public static func parse(_ bytes: [UInt8]) -> Result<NetworkdLease, NetworkdLeaseProblem> {
        guard bytes.count <= maximumSize else { return .failure(.oversized(bytes.count)) }
        let firstNonBlank = bytes.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
        return firstNonBlank == UInt8(ascii: "{") ? parseJSON(bytes) : parseEnvironment(bytes)
    }

    private static let androidMeteredMarker = Array("ANDROID_METERED".utf8)

    /// systemd 252..257: `VENDOR_SPECIFIC=<hex>`; the whole file must be UTF-8, as systemd writes it.
    private static func parseEnvironment(_ bytes: [UInt8]) -> Result<NetworkdLease, NetworkdLeaseProblem> {
        guard String(validating: bytes, as: UTF8.self) != nil else { return .failure(.unreadable("invalid UTF-8")) }
        guard let hex = EnvFileLines.lastValue(of: "VENDOR_SPECIFIC", in: bytes) else { return .success(NetworkdLease()) }
        return decodeHex(hex).map(NetworkdLease.init(vendorSpecific:))
    }

    /// A future systemd: `{"Vendor_Specific": "<hex>", ...}`; null is the same as absent.
    private static func parseJSON(_ bytes: [UInt8]) -> Result<NetworkdLease, NetworkdLeaseProblem> {
        switch JSONTopLevelObject.parse(bytes) {
        case .failure(let error):
            return .failure(.unreadable(error.reason))
        case .success(let members):
            switch members["Vendor_Specific"] {
            case nil, .null: return .success(NetworkdLease())
            case .string(let hex): return decodeHex(ArraySlice(hex.utf8)).map(NetworkdLease.init(vendorSpecific:))
            default: return .failure(.badVendorSpecific("Vendor_Specific is not a string"))
            }
        }
    }

    /// Hex digits (either case) to bytes; an empty value is no option 43.
    private static func decodeHex(_ hex: ArraySlice<UInt8>) -> Result<[UInt8]?, NetworkdLeaseProblem> {
        guard !hex.isEmpty else { return .success(nil) }
        guard hex.count <= maximumHexDigits else { return .failure(.badVendorSpecific("over \(maximumHexDigits) hex digits")) }
        guard hex.count % 2 == 0 else { return .failure(.badVendorSpecific("an odd number of hex digits")) }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(hex.count / 2)
        var digits = hex.makeIterator()
        while let high = digits.next(), let low = digits.next() {
            guard let highValue = hexDigitValue(high), let lowValue = hexDigitValue(low) else {
                return .failure(.badVendorSpecific("a byte that is not a hex digit"))
            }
            decoded.append(highValue << 4 | lowValue)
        }
        return .success(decoded)
    }
}

/// Why a networkd lease file gave no answer.
public enum NetworkdLeaseProblem: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file is larger than `NetworkdLease.maximumSize`; the byte count.
    case oversized(Int)
    /// Option 43 is there but not even-length hex of at most 2048 digits, or JSON of the wrong type.
    case badVendorSpecific(String)
    /// The file is not UTF-8, or not valid JSON where it starts like JSON.
    case unreadable(String)

    public var description: String {
        switch self {
        case .oversized(let count): "lease file too large (\(count) bytes, at most \(NetworkdLease.maximumSize))"
        case .badVendorSpecific(let why): "bad vendor-specific option (\(why))"
        case .unreadable(let why): "lease file unreadable (\(why))"
        }
    }
}
