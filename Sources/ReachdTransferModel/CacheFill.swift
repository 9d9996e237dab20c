/// The offline cache's GET of a URL into a file: conditional on the stored validators, bounded in size, and what
/// the answer's head means for it.
public enum CacheFill {
    /// `If-None-Match` with a stored ETag, else `If-Modified-Since` with a stored Last-Modified, else none.
    public static func conditionalFields(_ cached: Validators?) -> [(name: String, value: String)] {
        if let etag = cached?.etag { return [("If-None-Match", etag)] }
        if let date = cached?.lastModified { return [("If-Modified-Since", date)] }
        return []
    }

    /// What to do with an answer's head.
    public enum Head: Hashable, Sendable {
        /// 304 to a conditional request: the stored copy is current.
        case notModified
        /// Neither 200 nor 304: the status and headers are the answer (its body is not read).
        case answered
        /// No usable answer, for this reason.
        case failed(String)
        /// The announced length is over the limit.
        case tooLarge(Int64?)
        /// Store the body, `length` bytes when announced.
        case store(length: Int64?)
    }

    /// The head with `status` and `headers` of a request that was `conditional`, for a body of at most `limit` bytes.
    public static func judge(status: Int, headers: some Sequence<(name: String, value: String)>, conditional: Bool,
                             limit: Int64?) -> Head {
        if status == 304 { return conditional ? .notModified : .failed("the server answered 304 to an unconditional request") }
        guard status == 200 else { return .answered }
        if let refusal = ResumePlan.refusal(contentEncoding: headers.firstValue(named: "Content-Encoding")) { return .failed(refusal) }
        let length = contentLength(headers.firstValue(named: "Content-Length"))
        if let limit, (length ?? Int64.max) > limit { return .tooLarge(length) }
        return .store(length: length)
    }

    /// Why a body of `written` bytes is not the announced `length`, nil when it is (or none was announced).
    public static func shortBody(written: Int64, length: Int64?) -> String? {
        guard let length, written != length else { return nil }
        return "connection closed after \(written) of \(length) bytes"
    }

    /// A request that failed with `outcome`, as the cache reports it: the reason, or "stopped".
    public static func failure(_ outcome: FetchOutcome) -> String {
        switch outcome {
        case .failed(let reason), .retry(let reason, _), .destinationNotAnswering(let reason): reason
        default: "stopped"
        }
    }
}
