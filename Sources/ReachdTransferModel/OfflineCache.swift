import ReachdModel

/// How long a response may be served from the cache without asking the server (RFC 9111 §4.2):
/// `Cache-Control: max-age`, else `Expires` minus `Date`, less the response's age when it arrived
/// (`Age`, or how far `Date` lies behind the clock). All arithmetic saturates.
public struct CacheFreshness: Hashable, Sendable {
    /// Fresh until then; nil: stale at once.
    public var freshUntil: Timestamp?
    /// Stale copies must not be served without the server's say (`must-revalidate`, `no-cache`).
    public var mustRevalidate: Bool
    /// Until then the copy may stand in for a 500, 502, 503 or 504 answer (`stale-if-error`); nil: never.
    public var staleIfErrorUntil: Timestamp?

    public init(freshUntil: Timestamp? = nil, mustRevalidate: Bool = false, staleIfErrorUntil: Timestamp? = nil) {
        self.freshUntil = freshUntil
        self.mustRevalidate = mustRevalidate
        self.staleIfErrorUntil = staleIfErrorUntil
    }

    /// From the response headers, received at `now` (Unix seconds for HTTP dates).
    public init(cacheControl: String?, expires: String?, date: String?, age: String? = nil, now: Timestamp) {
        self.init(CacheControl(cacheControl), expires: expires, date: date, age: age, now: now)
    }

    public init(_ directives: CacheControl, expires: String?, date: String?, age: String? = nil, now: Timestamp) {
        self.init(mustRevalidate: directives.mustRevalidate || directives.noCache)
        defer {
            if !mustRevalidate, let seconds = directives.staleIfError {
                staleIfErrorUntil = (freshUntil ?? now).adding(seconds: seconds)
            }
        }
        guard !directives.noCache, !directives.noStore else { return }
        let nowSeconds = now.microseconds / 1_000_000
        // Without a Date the response counts as sent now.
        let sent = date.flatMap { HTTPDate.unixSeconds($0.trimmingSpaces) } ?? nowSeconds
        let lifetime: Int64
        if let maxAge = directives.maxAge {
            lifetime = maxAge
        } else if let expires {
            // An invalid Expires (such as "0") means already expired.
            guard let until = HTTPDate.unixSeconds(expires.trimmingSpaces) else { return }
            lifetime = until.saturatingAdd(-sent)
        } else {
            return
        }
        let apparentAge = max(0, nowSeconds.saturatingAdd(-sent))
        let initialAge = max(apparentAge, age.flatMap { deltaSeconds($0.trimmingSpaces) } ?? 0)
        let remaining = lifetime.saturatingAdd(-initialAge)
        guard remaining > 0 else { return }
        freshUntil = now.adding(seconds: remaining)
    }

    public func isFresh(at now: Timestamp) -> Bool { freshUntil.map { now < $0 } ?? false }
}

extension Timestamp {
    /// `seconds` later, saturating.
    func adding(seconds: Int64) -> Timestamp {
        Timestamp(microseconds: microseconds.saturatingAdd(seconds.saturatingMultiply(1_000_000)))
    }
}

/// The request header fields a response's `Vary` names (RFC 9111 §4.1): a stored response is used only for
/// a request that sends the same values for them. `Vary: *`, a member that is not a field name, or more than
/// 63 members, match no request.
public struct CacheVary: Hashable, Sendable {
    /// Lowercased, sorted, without repeats.
    public var fields: [String]
    /// `*`: the response is never reused.
    public var matchesNothing: Bool
    private static let memberLimit = 64

    public init(_ header: String?) {
        fields = []
        matchesNothing = false
        guard let header else { return }
        var names = Set<String>()
        let members = listMembers(header, limit: Self.memberLimit)
        // More names than are read: the ones dropped might matter, so nothing matches.
        if members.count == Self.memberLimit { matchesNothing = true }
        for member in members {
            if member == "*" || !isToken(member) {
                matchesNothing = true
                continue
            }
            names.insert(member.lowercased())
        }
        fields = names.sorted()
    }

    /// The request's values of the varied fields, one `name: value` line each (absent fields as empty
    /// values), to compare with the stored request's. Hash it before storing: it may hold credentials.
    public func selectingText(of requestHeaders: [(name: String, value: String)]) -> String {
        fields.map { field in
            let values = requestHeaders.filter { $0.name.lowercased() == field }.map(\.value)
            return "\(field): \(values.joined(separator: ", "))\n"
        }.joined()
    }
}

/// Whether a 200 answer may be kept for later requests, as a private cache decides (RFC 9111 §3):
/// never with `no-store` or `Vary: *`. `private` and `public` change nothing for a private cache.
public enum CacheAdmission {
    /// nil: reusable; else why the copy is handed over once and never served again.
    public static func refusal(_ directives: CacheControl, vary: CacheVary) -> String? {
        if directives.noStore { return "the server forbids storing it (no-store)" }
        if vary.matchesNothing { return "the server says it varies on everything (Vary: *)" }
        return nil
    }
}

/// What `fetch` does for a URL, from the cached copy (if any) and the route to its host.
public enum CacheSource: Hashable, Sendable {
    /// After the server answered `status` (neither 200 nor 304): the stale copy's size-free facts decide
    /// whether it may stand in. The answer is reported unless the route is metered, or the status is 500,
    /// 502, 503 or 504 and `stale-if-error` (the copy's, or the error answer's) still covers `now`; a copy
    /// that demands revalidation never stands in. Returns the reason to serve the copy, or nil to report.
    public static func standIn(status: Int, errorDirectives: CacheControl, copy: CacheFreshness?, metered: Bool,
                               now: Timestamp) -> String? {
        guard let copy, !copy.mustRevalidate else { return nil }
        if metered { return "the server answered \(status) and the route is metered" }
        guard [500, 502, 503, 504].contains(status) else { return nil }
        let errorWindow = errorDirectives.staleIfError.map { (copy.freshUntil ?? now).adding(seconds: $0) }
        guard let until = [copy.staleIfErrorUntil, errorWindow].compactMap({ $0 }).max(), now < until else { return nil }
        return "the server answered \(status) and allows a stale copy then (stale-if-error)"
    }

    /// Ask the server (conditionally when there is a copy); `limit`: give up on bodies larger than this.
    case network(limit: Int64?)
    /// Serve the copy; `reason` says why the network was not used.
    case cache(reason: String)
    /// Neither: the reason names what is missing.
    case fail(reason: String)

    /// The decision for a copy of `cachedSize` bytes (nil: none), fresh or not, given the verdict for `host`.
    public static func decide(host: String, verdict: Verdict?, cachedSize: Int64?, freshness: CacheFreshness?,
                              threshold: Int64, now: Timestamp) -> CacheSource {
        if cachedSize != nil, let freshness, freshness.isFresh(at: now) {
            return .cache(reason: "fresh (the server allows it until \(freshness.freshUntil!))")
        }
        let staleForbidden = freshness?.mustRevalidate ?? false
        guard let verdict, verdict.reachable else {
            let why = "\(host) is not reachable" + (verdict?.reason.map { " (\($0))" } ?? "")
            guard cachedSize != nil else { return .fail(reason: "not cached, and \(why)") }
            if staleForbidden { return .fail(reason: "the cached copy is stale and the server demands revalidation (must-revalidate); \(why)") }
            return .cache(reason: why)
        }
        guard verdict.metered else { return .network(limit: nil) }
        let via = verdict.interface.map { " (\($0))" } ?? ""
        if let cachedSize {
            // A known small body may come over a metered route; a large one is served from the cache.
            if cachedSize <= threshold || staleForbidden { return .network(limit: threshold) }
            return .cache(reason: "the route to \(host) is metered\(via) and the body (\(cachedSize) bytes) exceeds \(threshold)")
        }
        return .network(limit: threshold)
    }
}

/// The cache key of a request: method and the URL normalised (scheme and host lowercased, default
/// port and fragment dropped).
public enum CacheKey {
    public static func key(method: String, url: String) -> String? {
        guard let parsed = try? TransferURL(url) else { return nil }
        guard let afterScheme = url.firstIndex(of: ":").map({ url.index($0, offsetBy: 3) }), afterScheme <= url.endIndex else { return nil }
        let rest = url[afterScheme...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var path = String(rest[authorityEnd...])
        if let hash = path.firstIndex(of: "#") { path = String(path[..<hash]) }
        if path.isEmpty || path.hasPrefix("?") { path = "/" + path }
        let defaultPort = parsed.scheme == "https" ? 443 : 80
        let host = parsed.host.contains(":") ? "[\(parsed.host)]" : parsed.host
        let port = parsed.port.map { $0 == defaultPort ? "" : ":\($0)" } ?? ""
        return "\(method.uppercased()) \(parsed.scheme)://\(host)\(port)\(path)"
    }
}

/// Which entries to drop so the cache fits its bounds, least recently used first: its bytes (`capacity`), its
/// entries in all, and each uid's entries. An empty body counts as an entry like any other.
public enum CacheEviction {
    public struct Entry: Hashable, Sendable {
        public var uid: UInt32
        public var key: String
        public var size: Int64
        public var lastUsed: Timestamp

        public init(uid: UInt32, key: String, size: Int64, lastUsed: Timestamp) {
            self.uid = uid
            self.key = key
            self.size = size
            self.lastUsed = lastUsed
        }
    }

    public struct Limits: Hashable, Sendable {
        public var capacity: Int64
        public var entries: Int
        public var entriesPerUser: Int

        public init(capacity: Int64, entries: Int, entriesPerUser: Int) {
            self.capacity = capacity
            self.entries = entries
            self.entriesPerUser = entriesPerUser
        }
    }

    /// What the whole cache holds.
    public struct Usage: Hashable, Sendable {
        public var entries: Int
        public var bytes: Int64

        public init(entries: Int, bytes: Int64) {
            self.entries = entries
            self.bytes = bytes
        }
    }

    /// How many of a uid's least recently used entries go: those past `entriesPerUser`.
    public static func userExcess(held: Int, limits: Limits) -> Int { max(0, held - limits.entriesPerUser) }

    /// Whether `usage` exceeds the cache's bounds in all.
    public static func isOver(_ usage: Usage, limits: Limits) -> Bool { usage.entries > limits.entries || usage.bytes > limits.capacity }

    /// The entries of `oldestFirst` (the cache's least recently used, in that order) to drop until `usage`
    /// fits the bounds in all.
    public static func victims(oldestFirst entries: [Entry], usage: Usage, limits: Limits) -> [Entry] {
        var usage = usage
        var victims: [Entry] = []
        for entry in entries {
            guard isOver(usage, limits: limits) else { break }
            victims.append(entry)
            usage.entries -= 1
            usage.bytes -= entry.size
        }
        return victims
    }
}

/// The answer to `fetch`: where the body is and where it came from.
public struct FetchResult: Hashable, Sendable, Codable {
    public var url: String
    /// `network` or `cache`.
    public var source: String
    /// Why the cached copy was used (nil from the network).
    public var reason: String?
    /// Seconds since the body was fetched or confirmed by the server.
    public var age: Int64
    public var status: Int
    public var contentType: String?
    public var size: Int64
    /// The body: a file readable only by the caller, valid until the entry is replaced or evicted.
    public var body: String

    public init(url: String, source: String, reason: String?, age: Int64, status: Int, contentType: String?, size: Int64, body: String) {
        self.url = url
        self.source = source
        self.reason = reason
        self.age = age
        self.status = status
        self.contentType = contentType
        self.size = size
        self.body = body
    }
}
