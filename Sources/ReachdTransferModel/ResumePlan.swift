/// How to ask for the rest of a file, and what the server's answer means for the partial file
/// (RFC 9110 §14: Range, If-Range, 206, 416). Pure: the fetcher does the I/O.
public enum ResumePlan {
    /// Headers of the GET for a partial file of `offset` bytes holding the version `validators`.
    /// Without a validator a resume could splice two versions of the file, so it restarts from 0.
    /// A new transfer of a refresh job is conditional on the file in place (`installed`): If-None-Match
    /// with its ETag, else If-Modified-Since with its Last-Modified.
    public static func request(offset: Int64, validators: Validators, installed: Validators? = nil) -> Request {
        guard offset > 0, let ifRange = validators.ifRange else {
            if let etag = installed?.etag { return Request(offset: 0, headers: [("If-None-Match", etag)]) }
            if let date = installed?.lastModified { return Request(offset: 0, headers: [("If-Modified-Since", date)]) }
            return Request(offset: 0, headers: [])
        }
        return Request(offset: offset, headers: [("Range", "bytes=\(offset)-"), ("If-Range", ifRange)])
    }

    public struct Request: Sendable {
        /// Where the body will be written in the partial file (0: truncate first).
        public var offset: Int64
        public var headers: [(String, String)]

        /// Whether the request asks for the body only if it changed (If-None-Match or If-Modified-Since):
        /// only then may a 304 answer it.
        public var isConditional: Bool {
            headers.contains { $0.0 == "If-None-Match" || $0.0 == "If-Modified-Since" }
        }
    }

    /// The response head, as far as resuming cares.
    public struct Response: Hashable, Sendable {
        public var status: Int
        public var contentLength: Int64?
        public var contentRange: String?
        public var retryAfter: String?
        /// `Content-Encoding`: the request asks for `identity`, and the file must hold the representation itself.
        public var contentEncoding: String?
        public var validators: Validators

        public init(status: Int, contentLength: Int64? = nil, contentRange: String? = nil, retryAfter: String? = nil,
                    contentEncoding: String? = nil, validators: Validators = Validators()) {
            self.status = status
            self.contentLength = contentLength
            self.contentRange = contentRange
            self.retryAfter = retryAfter
            self.contentEncoding = contentEncoding
            self.validators = validators
        }
    }

    public enum Action: Hashable, Sendable {
        /// Write the body at `offset` (0 means the partial file is truncated first); `total` is the whole size if known.
        case write(offset: Int64, total: Int64?, validators: Validators)
        /// The partial file already holds the whole file (416 with `*/size` equal to it).
        case complete
        /// 304 to a conditional request: the file in place is current.
        case notModified
        /// Drop the partial file and ask again from byte 0.
        case restart(reason: String)
        /// Try again later (5xx, 429); `retryAfter` is the server's header, if any.
        case retry(reason: String, retryAfter: String?)
        /// Give up: the reason names the status.
        case fail(reason: String)
    }

    /// What to do with `response` to a request made by `request(offset:validators:installed:)` at `offset` for a
    /// partial file holding the version `current`, of `total` bytes if known; `conditional`: the request
    /// carried If-None-Match or If-Modified-Since. A 206 is written only when it continues exactly that
    /// version at exactly that offset (RFC 9110 §13.1.5, §15.3.7); anything else starts the file over.
    public static func interpret(_ response: Response, offset: Int64, current: Validators = Validators(), total: Int64? = nil,
                                 conditional: Bool = false) -> Action {
        if (200...299).contains(response.status), let refusal = refusal(contentEncoding: response.contentEncoding) {
            return .fail(reason: "failed: \(refusal)")
        }
        switch response.status {
        case 200:
            // A full body: the first request, or the server ignored the range / the file changed (If-Range).
            return .write(offset: 0, total: response.contentLength, validators: response.validators)
        case 206:
            guard offset > 0, let range = response.contentRange.flatMap(ContentRange.init) else {
                return .restart(reason: "discarded the partial file: the server sent 206 without a usable Content-Range")
            }
            guard range.first == offset else {
                return .restart(reason: "discarded the partial file: the server resumed at byte \(range.first.map(String.init) ?? "?") instead of \(offset)")
            }
            guard range.total == nil || range.last.map({ $0 + 1 }) == range.total else {
                return .restart(reason: "discarded the partial file: the server's 206 stops before the end (\(response.contentRange ?? ""))")
            }
            if let total, range.total != total {
                return .restart(reason: "discarded the partial file: the server's 206 is of a file of \(range.total.map(String.init) ?? "unknown") bytes, not \(total)")
            }
            guard response.validators.continues(current) else {
                return .restart(reason: "discarded the partial file: the server's 206 names another version (ETag \(shown(response.validators.etag)), "
                    + "Last-Modified \(shown(response.validators.lastModified))) than the partial file's (\(shown(current.etag ?? current.lastModified)))")
            }
            return .write(offset: offset, total: range.total ?? total, validators: current)
        case 304:
            guard conditional else { return .retry(reason: "server answered 304 to a request without a condition", retryAfter: response.retryAfter) }
            return .notModified
        case 416:
            if let range = response.contentRange.flatMap(ContentRange.init), range.first == nil, let total = range.total, total == offset {
                return .complete
            }
            return .restart(reason: "server refused the range (416) for a partial file of \(offset) bytes")
        case 408, 425, 429, 500...599:
            return .retry(reason: "server answered \(response.status)", retryAfter: response.retryAfter)
        case 300...399:
            return .fail(reason: "failed: server answered \(response.status) (too many redirects or no Location)")
        default:
            return .fail(reason: "failed: server answered \(response.status)")
        }
    }

    /// Why a body with this `Content-Encoding` cannot be kept, nil for none or `identity`: requests ask for
    /// `identity`, and a file must hold the representation's own bytes.
    public static func refusal(contentEncoding: String?) -> String? {
        guard let encoding = contentEncoding?.trimmingSpaces, !encoding.isEmpty, encoding.lowercased() != "identity" else { return nil }
        return "the server sent the body with Content-Encoding \(shown(encoding)) although identity was asked for"
    }

    /// A server's header value as a reason may show it: printable ASCII only, at most 80 characters.
    static func shown(_ value: String?) -> String {
        guard let value else { return "none" }
        let printable = value.unicodeScalars.prefix(80).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" }
        return String(printable) + (value.unicodeScalars.count > 80 ? "…" : "")
    }
}

/// `Content-Range: bytes FIRST-LAST/TOTAL` or `bytes */TOTAL`.
public struct ContentRange: Hashable, Sendable {
    /// nil in `*/TOTAL` (the unsatisfied-range form).
    public var first: Int64?
    public var last: Int64?
    /// nil when the server wrote `*` for an unknown size.
    public var total: Int64?

    public init?(_ text: String) {
        let trimmed = text.drop { $0 == " " }
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst(6).drop { $0 == " " }
        guard let slash = spec.firstIndex(of: "/") else { return nil }
        let range = spec[..<slash], size = spec[spec.index(after: slash)...]
        if size == "*" {
            total = nil
        } else {
            guard let value = decimal(size) else { return nil }
            total = value
        }
        if range == "*" {
            guard total != nil else { return nil }
            first = nil
            last = nil
        } else {
            let parts = range.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 2, let a = decimal(parts[0]), let b = decimal(parts[1]), a <= b else { return nil }
            if let total, b >= total { return nil }
            first = a
            last = b
        }
    }
}
