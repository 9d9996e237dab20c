import Foundation

/// What a network announced as its captive-portal API (RFC 8910: DHCPv4 option 114, DHCPv6 103, RA 37).
public enum CaptivePortalAnnouncement: Hashable, Sendable {
    /// `urn:ietf:params:capport:unrestricted`: the network says it has no captive portal.
    case unrestricted
    /// An https URI of the RFC 8908 API.
    case api(String)
    /// Anything else (plain http, not a URI, ...): ignored, with why.
    case rejected(String)

    static let unrestrictedURN = "urn:ietf:params:capport:unrestricted"

    public init(uri: String) {
        if uri.lowercased() == Self.unrestrictedURN {
            self = .unrestricted
        } else if let url = CaptivePortalStatus.httpsURL(uri) {
            self = .api(url)
        } else {
            self = .rejected(uri.lowercased().hasPrefix("https://") ? "not a usable https URI" : "not an https URI (RFC 8908 requires TLS)")
        }
    }
}

/// The RFC 8908 API's answer (`application/captive+json`).
public struct CaptivePortalStatus: Hashable, Sendable {
    /// The client is held back (it can still reach the portal and the API).
    public var captive: Bool
    /// The page a user logs in at; kept only when https (RFC 8908: it MUST be reached over TLS).
    public var userPortalURL: String?
    /// A page about the venue; kept only when https.
    public var venueInfoURL: String?
    /// The user portal can extend the session.
    public var canExtendSession: Bool?
    /// Seconds until the client is held back again.
    public var secondsRemaining: UInt64?
    /// Bytes (both directions) until the client is held back again.
    public var bytesRemaining: UInt64?

    public init(captive: Bool, userPortalURL: String? = nil, venueInfoURL: String? = nil, canExtendSession: Bool? = nil,
                secondsRemaining: UInt64? = nil, bytesRemaining: UInt64? = nil) {
        self.captive = captive
        self.userPortalURL = userPortalURL
        self.venueInfoURL = venueInfoURL
        self.canExtendSession = canExtendSession
        self.secondsRemaining = secondsRemaining
        self.bytesRemaining = bytesRemaining
    }

    /// Largest body parsed (64 KiB).
    public static let maximumBody = 64 * 1024
    /// Longest URL kept.
    static let maximumURL = 2048

    private struct Body: Decodable {
        var captive: Bool?
        var userPortalURL: String?
        var venueInfoURL: String?
        var canExtendSession: Bool?
        var secondsRemaining: UInt64?
        var bytesRemaining: UInt64?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case captive, userPortalURL = "user-portal-url", venueInfoURL = "venue-info-url", canExtendSession = "can-extend-session"
            case secondsRemaining = "seconds-remaining", bytesRemaining = "bytes-remaining"
        }
    }

    /// Reads the API's JSON: an object with a boolean `captive`; unknown keys are ignored, a known key of the
    /// wrong type (a count that is negative, fractional or beyond UInt64 included) is an error, and a URL that is
    /// not https, too long or holds a control character is dropped.
    public static func parse(_ body: [UInt8]) -> Result<CaptivePortalStatus, CaptivePortalProblem> {
        guard body.count <= maximumBody else { return .failure(.oversized(body.count)) }
        let decoded: Body
        do {
            decoded = try JSONDecoder().decode(Body.self, from: Data(body))
        } catch {
            return .failure(problem(error))
        }
        guard let captive = decoded.captive else { return .failure(.missingCaptive) }
        return .success(CaptivePortalStatus(
            captive: captive, userPortalURL: decoded.userPortalURL.flatMap(httpsURL), venueInfoURL: decoded.venueInfoURL.flatMap(httpsURL),
            canExtendSession: decoded.canExtendSession, secondsRemaining: decoded.secondsRemaining, bytesRemaining: decoded.bytesRemaining
        ))
    }

    /// A decoding error as the key it is about, or as a body that is no JSON object.
    private static func problem(_ error: any Error) -> CaptivePortalProblem {
        let context: DecodingError.Context?
        switch error as? DecodingError {
        case .typeMismatch(_, let found), .valueNotFound(_, let found), .dataCorrupted(let found): context = found
        default: context = nil
        }
        if let key = context?.codingPath.first?.stringValue { return .wrongType(key) }
        if case .typeMismatch = error as? DecodingError { return .notJSONObject("the top level is not an object") }
        return .notJSONObject("not JSON")
    }

    /// `text` when it is an https URL with a host, at most `maximumURL` bytes of printable ASCII; else nil.
    static func httpsURL(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        guard bytes.count <= maximumURL, bytes.allSatisfy({ (0x21...0x7E).contains($0) }),
              text.lowercased().hasPrefix("https://") else { return nil }
        let host = text.dropFirst("https://".count).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !host.isEmpty, !host.contains("@") else { return nil }
        return text
    }
}

/// Why an API answer says nothing.
public enum CaptivePortalProblem: Error, Hashable, Sendable, CustomStringConvertible {
    case oversized(Int)
    case notJSONObject(String)
    case missingCaptive
    /// A known key holds the wrong type.
    case wrongType(String)

    public var description: String {
        switch self {
        case .oversized(let count): "over \(CaptivePortalStatus.maximumBody) bytes (\(count))"
        case .notJSONObject(let why): why
        case .missingCaptive: "no \"captive\""
        case .wrongType(let key): "\"\(key)\" has the wrong type"
        }
    }
}

/// When to ask a captive-portal API again.
public enum CaptivePortalSchedule {
    /// After a failed query (`status` nil): 5 s, doubling with each failure in a row, at most 300 s. While
    /// captive: 10 s (the user is logging in). Not captive with `seconds-remaining` S: S − 30 s (so the
    /// change is seen about when it happens), at least 5 s, at most 600 s. Not captive otherwise: 600 s.
    public static func secondsUntilNextQuery(after status: CaptivePortalStatus?, failures: Int) -> Double {
        guard let status else { return min(300, 5 * Double(1 << min(max(failures - 1, 0), 16))) }
        if status.captive { return 10 }
        guard let remaining = status.secondsRemaining else { return 600 }
        return min(600, max(5, Double(remaining) - 30))
    }
}
