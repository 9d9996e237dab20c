/// The header fields reachd-transfers adds to every request.
public enum RequestFields {
    /// Who asks, a connection of its own (a pooled one may belong to a route that is gone since), and the bytes as
    /// the server stores them (no content coding).
    public static let common: [(name: String, value: String)] = [
        ("User-Agent", "reachd-transfers/1"), ("Connection", "close"), ("Accept-Encoding", "identity"),
    ]

    /// The fields a request sent with `credentials` carries besides its own (for the cache's Vary check).
    public static func sent(credentials: Credentials?) -> [(name: String, value: String)] {
        common + (credentials.map { [("Authorization", $0.authorization)] } ?? [])
    }
}

/// The one rule for where a netrc's credentials may go: over https, or over plain http only where the job allows it,
/// and never across a redirect.
public enum CredentialRule {
    /// What a request to a URL does with the credentials.
    public enum Decision: Sendable {
        /// No credentials: the request goes as it is.
        case none
        /// The request carries this `Authorization` value.
        case authorize(String)
        /// The request is not sent: the job ends with this outcome.
        case refuse(FetchOutcome)
    }

    /// The decision for a request to `url` with `credentials`; `allowInsecureAuth` lets them go over plain http.
    public static func decide(url: String, credentials: Credentials?, allowInsecureAuth: Bool) -> Decision {
        guard let credentials else { return .none }
        guard url.lowercased().hasPrefix("https:") || allowInsecureAuth else {
            return .refuse(.failed(reason: "failed: the netrc has credentials for this server but the URL is plain http; "
                + "use https, or --allow-insecure-auth to send them readable"))
        }
        return .authorize(credentials.authorization)
    }

    /// Whether a request may follow redirects: only without credentials (the header must not travel to another
    /// server) and without a body (a POST answered 301/302, or any 303, would become a GET).
    public static func followsRedirects(credentials: Credentials?, hasBody: Bool) -> Bool {
        credentials == nil && !hasBody
    }
}
