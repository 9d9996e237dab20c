/// Status, Content-Range, Content-Length, ETag, Last-Modified, Date and Content-Encoding of an answer to a
/// resume: no input may trap, and no answer but a continuation of the partial file's version may be written at its offset.
@_cdecl("LLVMFuzzerTestOneInput")
public func resumeFuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let fields = fuzzFields(data, count, fields: 8)
    let status = fields[0].flatMap { Int($0.prefix(3)) } ?? 206
    let partial = Validators(etag: "\"v1\"", lastModified: "Sun, 06 Nov 1994 08:00:00 GMT", date: "Sun, 06 Nov 1994 08:49:37 GMT")
    let sent = Validators(etag: fields[3], lastModified: fields[4], date: fields[5])
    _ = sent.ifRange
    let response = ResumePlan.Response(status: status, contentLength: fields[2].flatMap { decimal($0) }, contentRange: fields[1],
                                       retryAfter: fields[7], contentEncoding: fields[6], validators: sent)
    let conditional = count % 2 == 0
    switch ResumePlan.interpret(response, offset: 100, current: partial, total: 500, conditional: conditional) {
    case .write(let offset, let total, _) where offset == 100:
        guard sent.strongETag == "\"v1\"", total == 500 else { fatalError("spliced: \(fields)") }
    case .notModified where !conditional:
        fatalError("304 to an unconditional request taken as current")
    case .retry(_, let retryAfter):
        if let retryAfter, let seconds = RetryPolicy.retryAfterSeconds(retryAfter, now: 1_700_000_000), !(seconds >= 0 && seconds.isFinite) {
            fatalError("Retry-After gave \(seconds)")
        }
    default:
        break
    }
    return 0
}
