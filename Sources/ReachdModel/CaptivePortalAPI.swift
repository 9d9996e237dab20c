/// What a network announced as its captive-portal API (RFC 8910: DHCPv4 114, DHCPv6 103, RA 37).
public enum CaptivePortalAnnouncement: Hashable, Sendable {
    /// `urn:ietf:params:capport:unrestricted`: the network says it has no captive portal.
    case unrestricted
    /// An https URI of the RFC 8908 API.
    case api(String)
    /// Anything else (plain http, not a URI, ...): ignored, with why.
    case rejected(String)

    /// Judges an announced URI: the unrestricted URN (any case), else an https URI (`CaptivePortalURI`), else rejected.
    public init(uri: String) {
        if uri.lowercased() == "urn:ietf:params:capport:unrestricted" {
            self = .unrestricted
        } else if let why = CaptivePortalURI.rejection(of: uri) {
            self = .rejected(why)
        } else {
            self = .api(uri)
        }
    }
}

/// The RFC 8908 API's answer.
public struct CaptivePortalStatus: Hashable, Sendable {
    public var captive: Bool
    /// The portal a user logs in on; only kept when an https URI (RFC 8908: MUST be TLS), else nil.
    public var userPortalURL: String?
    /// The venue's information page; only kept when an https URI, else nil.
    public var venueInfoURL: String?
    public var canExtendSession: Bool?
    public var secondsRemaining: UInt64?
    public var bytesRemaining: UInt64?

    public init(
        captive: Bool, userPortalURL: String? = nil, venueInfoURL: String? = nil, canExtendSession: Bool? = nil,
        secondsRemaining: UInt64? = nil, bytesRemaining: UInt64? = nil
    ) {
        self.captive = captive
        self.userPortalURL = userPortalURL
        self.venueInfoURL = venueInfoURL
        self.canExtendSession = canExtendSession
        self.secondsRemaining = secondsRemaining
        self.bytesRemaining = bytesRemaining
    }

    /// Largest body parsed (64 KiB).
    public static let maximumBody = 64 * 1024

    /// Reads an `application/captive+json` body. The top level must be an object with a boolean `captive`; unknown
    /// keys are ignored; a known key of the wrong JSON type is `.wrongType(key)`, and so is a number that is not a
    /// non-negative integer fitting `UInt64`. A URL that is not an acceptable https URI (`CaptivePortalURI`) is
    /// dropped, not an error.
    public static func parse(_ body: [UInt8]) -> Result<CaptivePortalStatus, CaptivePortalProblem> {
        guard body.count <= maximumBody else { return .failure(.oversized(body.count)) }
        let members: [String: JSONMember]
        switch JSONTopLevelObject.parse(body) {
        case .failure(let error): return .failure(.notJSONObject(error.reason))
        case .success(let read): members = read
        }
        guard let captiveMember = members["captive"] else { return .failure(.missingCaptive) }
        guard case .bool(let captive) = captiveMember else { return .failure(.wrongType("captive")) }
        var status = CaptivePortalStatus(captive: captive)
        do throws(CaptivePortalProblem) {
            status.userPortalURL = try httpsURL(members, "user-portal-url")
            status.venueInfoURL = try httpsURL(members, "venue-info-url")
            status.canExtendSession = try bool(members, "can-extend-session")
            status.secondsRemaining = try unsignedInteger(members, "seconds-remaining")
            status.bytesRemaining = try unsignedInteger(members, "bytes-remaining")
        } catch {
            return .failure(error)
        }
        return .success(status)
    }

    private static func httpsURL(_ members: [String: JSONMember], _ key: String) throws(CaptivePortalProblem) -> String? {
        switch members[key] {
        case nil: return nil
        case .string(let url): return CaptivePortalURI.rejection(of: url) == nil ? url : nil
        default: throw .wrongType(key)
        }
    }

    private static func bool(_ members: [String: JSONMember], _ key: String) throws(CaptivePortalProblem) -> Bool? {
        switch members[key] {
        case nil: return nil
        case .bool(let value): return value
        default: throw .wrongType(key)
        }
    }

    private static func unsignedInteger(_ members: [String: JSONMember], _ key: String) throws(CaptivePortalProblem) -> UInt64? {
        guard let member = members[key] else { return nil }
        guard let value = member.unsignedInteger else { throw .wrongType(key) }
        return value
    }
}

/// Why an RFC 8908 answer gave no status.
public enum CaptivePortalProblem: Error, Hashable, Sendable, CustomStringConvertible {
    /// The body is larger than `CaptivePortalStatus.maximumBody`; the byte count.
    case oversized(Int)
    /// Not JSON, or JSON whose top level is not an object; why.
    case notJSONObject(String)
    /// The required `captive` is absent.
    case missingCaptive
    /// A known key holds the wrong JSON type (or a number that is not an unsigned 64-bit integer); the key.
    case wrongType(String)

    public var description: String {
        switch self {
        case .oversized(let count): "captive portal API answer too large (\(count) bytes, at most \(CaptivePortalStatus.maximumBody))"
        case .notJSONObject(let why): "captive portal API answer is not a JSON object (\(why))"
        case .missingCaptive: "captive portal API answer has no \"captive\""
        case .wrongType(let key): "captive portal API answer has \"\(key)\" of the wrong type"
        }
    }
}

/// The https URIs reachd accepts from a network (the API's, the user portal's, the venue's).
enum CaptivePortalURI {
    /// Why `uri` is not accepted, or nil: it must be at most 2048 bytes of printable ASCII (no space, no control
    /// character), start with `https://` (the scheme in any case) and name a non-empty host.
    static func rejection(of uri: String) -> String? {
        guard !uri.isEmpty else { return "empty" }
        guard isPrintableASCII(uri.utf8, upTo: 2048) else { return "over 2048 bytes, or a space, control or non-ASCII byte" }
        guard uri.utf8.count >= 8, uri.prefix(8).lowercased() == "https://" else { return "not an https URI" }
        guard hasHost(authority: uri.dropFirst(8).prefix { !"/?#".contains($0) }) else { return "no host" }
        return nil
    }

    /// The authority `[userinfo@]host[:port]` names a host; an IPv6 literal is `[...]`.
    private static func hasHost(authority: Substring) -> Bool {
        let hostAndPort = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        if hostAndPort.first == "[" {
            guard let close = hostAndPort.firstIndex(of: "]") else { return false }
            return hostAndPort.distance(from: hostAndPort.startIndex, to: close) > 1
        }
        return !(hostAndPort.prefix { $0 != ":" }.isEmpty)
    }
}
