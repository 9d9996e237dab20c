import ReachdModel

/// The start of a server's answer to an upload: what decides the job's outcome.
public struct UploadAnswer: Hashable, Sendable {
    public var status: Int
    public var retryAfter: String?
    public var location: String?
    /// The first 1 KiB of the body at most: the rest of an answer (which may never end) is not waited for.
    public var snippet: [UInt8]
    /// A proxy forwarding the upload refused it for want of the proxy's credentials (`ProxyAnswer`).
    public var proxyRefusedCredentials = false

    public static let snippetBytes = 1024

    public init(status: Int, retryAfter: String?, location: String?, snippet: [UInt8]) {
        (self.status, self.retryAfter, self.location, self.snippet) = (status, retryAfter, location, snippet)
    }

    /// The answer whose head has `status` and `headers`, before its body.
    public init(status: Int, headers: some Sequence<(name: String, value: String)>) {
        self.init(status: status, retryAfter: headers.firstValue(named: "Retry-After"), location: headers.firstValue(named: "Location"),
                  snippet: [])
        proxyRefusedCredentials = ProxyAnswer.refusesCredentials(status: status)
    }

    /// Keeps what fits of the next part of the body; true once the snippet is full.
    public mutating func keep(_ part: some Collection<UInt8>) -> Bool {
        snippet += part.prefix(Self.snippetBytes - snippet.count)
        return snippet.count >= Self.snippetBytes
    }

    /// The upload's outcome by this answer (`now`: seconds since 1970, for a Retry-After date). A failure quotes the
    /// start of the body on one line, control characters escaped: a server's text must not drive a terminal.
    public func outcome(now: Double) -> FetchOutcome {
        let text = String(decoding: snippet, as: UTF8.self)
        switch status {
        case 200..<300: return .uploaded(status: status, body: text)
        case 408, 425, 429, 500...599:
            return .retry(reason: "server answered \(status)", retryAfter: retryAfter.flatMap { RetryPolicy.retryAfterSeconds($0, now: now) })
        default:
            let quote = String(text.split(whereSeparator: \.isWhitespace).joined(separator: " ").prefix(200)).terminalSafe
            return .failed(reason: "failed: server answered \(status)" + (quote.isEmpty ? "" : ": \(quote)"))
        }
    }
}
