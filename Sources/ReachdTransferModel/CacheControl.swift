/// The `Cache-Control` directives of a response, as a private cache reads them (RFC 9111 §5.2.2). Total:
/// unknown directives are ignored, a directive whose argument is missing or malformed counts as absent
/// (`max-age` without a value gives no freshness), durations saturate at 2^31 seconds.
public struct CacheControl: Hashable, Sendable {
    /// `max-age`; `s-maxage` is for shared caches and ignored.
    public var maxAge: Int64?
    /// `no-store`: never keep the response.
    public var noStore = false
    /// `no-cache` (unqualified): a stored copy must be revalidated before each use.
    public var noCache = false
    /// `must-revalidate`: a stale copy is never served without the server. (`proxy-revalidate` binds shared
    /// caches only and is ignored, as are `public` and `private`, which change nothing for a private cache.)
    public var mustRevalidate = false
    /// `stale-if-error` (RFC 5861): for this many seconds after going stale, the copy may stand in for a
    /// 500, 502, 503 or 504 answer.
    public var staleIfError: Int64?

    public init(maxAge: Int64? = nil, noStore: Bool = false, noCache: Bool = false, mustRevalidate: Bool = false,
                staleIfError: Int64? = nil) {
        self.maxAge = maxAge
        self.noStore = noStore
        self.noCache = noCache
        self.mustRevalidate = mustRevalidate
        self.staleIfError = staleIfError
    }

    /// From the header's value (nil: no header). A repeated directive keeps its most restrictive reading:
    /// the smaller `max-age` or `stale-if-error`.
    public init(_ header: String?) {
        guard let header else { return }
        for member in listMembers(header) {
            let name: Substring, argument: Substring?
            if let equals = member.firstIndex(of: "=") {
                name = member[..<equals]
                argument = member[member.index(after: equals)...]
            } else {
                name = member
                argument = nil
            }
            guard isToken(name) else { continue }
            switch name.lowercased() {
            case "max-age":
                if let seconds = argument.flatMap(tokenOrQuotedString).flatMap(deltaSeconds) { maxAge = min(maxAge ?? seconds, seconds) }
            case "no-store":
                noStore = true
            case "no-cache":
                // `no-cache="field"` only restricts those fields of a shared cache's copy; unqualified, it binds us.
                if argument == nil { noCache = true }
            case "must-revalidate":
                mustRevalidate = true
            case "stale-if-error":
                if let seconds = argument.flatMap(tokenOrQuotedString).flatMap(deltaSeconds) { staleIfError = min(staleIfError ?? seconds, seconds) }
            default:
                continue
            }
        }
    }
}
