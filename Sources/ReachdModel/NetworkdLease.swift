import Foundation

/// What reachd reads from a systemd-networkd DHCPv4 lease file (`/run/systemd/netif/leases/IFINDEX`), which
/// networkd calls private data: read tolerantly. systemd 252 to 257 write `KEY=value` lines
/// (`VENDOR_SPECIFIC=` is option 43 in hex); a later systemd may write JSON (`"Vendor_Specific"`, hex too).
public struct NetworkdLease: Hashable, Sendable {
    /// Option 43 (vendor-specific information), raw, when the lease has it.
    public var vendorSpecific: [UInt8]?

    public init(vendorSpecific: [UInt8]? = nil) { self.vendorSpecific = vendorSpecific }

    /// Largest file read (64 KiB); larger is `.oversized`.
    public static let maximumSize = 64 * 1024
    /// Longest option 43 taken, in hex digits (a DHCP option is at most 255 bytes; RFC 3396 may join a few).
    static let maximumHexDigits = 2048
    private static let androidMetered = Array("ANDROID_METERED".utf8)

    /// Option 43 contains `ANDROID_METERED` anywhere in its bytes (case-sensitive), as NetworkManager and Android test it.
    public var androidMetered: Bool {
        guard let bytes = vendorSpecific, bytes.count >= Self.androidMetered.count else { return false }
        return (0...(bytes.count - Self.androidMetered.count)).contains { start in
            bytes[start..<(start + Self.androidMetered.count)].elementsEqual(Self.androidMetered)
        }
    }

    public static func parse(_ bytes: [UInt8]) -> Result<NetworkdLease, NetworkdLeaseProblem> {
        guard bytes.count <= maximumSize else { return .failure(.oversized(bytes.count)) }
        let first = bytes.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        if first == UInt8(ascii: "{") { return parseJSON(bytes) }
        guard String(validating: bytes, as: UTF8.self) != nil else { return .failure(.unreadable("not UTF-8 text")) }
        guard let hex = EnvFileLines.values(bytes)["VENDOR_SPECIFIC"] else { return .success(NetworkdLease()) }
        return decodeHex(hex).map { NetworkdLease(vendorSpecific: $0) }
    }

    private struct JSONLease: Decodable {
        var vendorSpecific: String?
        enum CodingKeys: String, CodingKey { case vendorSpecific = "Vendor_Specific" }
    }

    private static func parseJSON(_ bytes: [UInt8]) -> Result<NetworkdLease, NetworkdLeaseProblem> {
        let lease: JSONLease
        do {
            lease = try JSONDecoder().decode(JSONLease.self, from: Data(bytes))
        } catch DecodingError.typeMismatch {
            return .failure(.badVendorSpecific("Vendor_Specific is not a string"))
        } catch {
            return .failure(.unreadable("broken JSON"))
        }
        guard let hex = lease.vendorSpecific else { return .success(NetworkdLease()) }
        return decodeHex(Array(hex.utf8)).map { NetworkdLease(vendorSpecific: $0) }
    }

    /// Hex digits (either case) to bytes: an even count, at most `maximumHexDigits`.
    private static func decodeHex(_ digits: [UInt8]) -> Result<[UInt8], NetworkdLeaseProblem> {
        guard digits.count <= maximumHexDigits else { return .failure(.badVendorSpecific("over \(maximumHexDigits) hex digits")) }
        guard digits.count % 2 == 0 else { return .failure(.badVendorSpecific("an odd number of hex digits")) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else {
                return .failure(.badVendorSpecific("not a hex digit"))
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return .success(bytes)
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Why a lease file says nothing.
public enum NetworkdLeaseProblem: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file has this many bytes, more than `NetworkdLease.maximumSize`.
    case oversized(Int)
    /// Option 43 is there but cannot be decoded.
    case badVendorSpecific(String)
    /// Not text, or broken JSON.
    case unreadable(String)

    public var description: String {
        switch self {
        case .oversized(let count): "over \(NetworkdLease.maximumSize) bytes (\(count))"
        case .badVendorSpecific(let why): "VENDOR_SPECIFIC: \(why)"
        case .unreadable(let why): why
        }
    }
}

/// What reachd reads from networkd's link state file (`/run/systemd/netif/links/IFINDEX`).
public enum NetworkdLinkState {
    /// The captive-portal URI networkd ≥ 254 records (`CAPTIVE_PORTAL=`): nil when absent, empty, over 2048
    /// bytes, or holding a byte outside printable ASCII.
    public static func captivePortal(in bytes: [UInt8]) -> String? {
        guard bytes.count <= NetworkdLease.maximumSize, let value = EnvFileLines.values(bytes)["CAPTIVE_PORTAL"],
              !value.isEmpty, value.count <= 2048, value.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
        return String(decoding: value, as: UTF8.self)
    }
}
