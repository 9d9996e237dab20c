import ReachdModel

/// The offline cache's reading of an answer: Cache-Control, Expires, Date and Age (freshness, stale-if-error),
/// Vary, and an error answer's Cache-Control with its status (whether the stale copy stands in). No input may
/// trap, and the rules must hold: nothing fresh until the past, no-store/no-cache never fresh, must-revalidate
/// never stands in, bounded Vary.
@_cdecl("LLVMFuzzerTestOneInput")
public func cacheControlFuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let fields = fuzzFields(data, count, fields: 7)
    let directives = CacheControl(fields[0])
    let now = Timestamp(microseconds: 1_700_000_000_000_000)
    let freshness = CacheFreshness(directives, expires: fields[1], date: fields[2], age: fields[3], now: now)
    if let until = freshness.freshUntil, until <= now { fatalError("fresh until the past") }
    if directives.noStore || directives.noCache, freshness.freshUntil != nil { fatalError("no-store/no-cache made fresh") }
    if freshness.mustRevalidate, freshness.staleIfErrorUntil != nil { fatalError("stale-if-error over must-revalidate") }
    _ = freshness.isFresh(at: Timestamp(microseconds: .max))

    let vary = CacheVary(fields[4])
    if vary.fields.count > 64 { fatalError("unbounded Vary") }
    _ = vary.selectingText(of: [("Authorization", fields[5] ?? ""), ("User-Agent", "reachd-transfers/1")])
    _ = CacheAdmission.refusal(directives, vary: vary)

    let status = Int(fields[6].flatMap { decimal($0) }.map { $0 % 1000 } ?? 503)
    let standIn = CacheSource.standIn(status: status, errorDirectives: CacheControl(fields[5]), copy: freshness, metered: count % 2 == 0, now: now)
    if freshness.mustRevalidate, standIn != nil { fatalError("a copy that demands revalidation stood in") }
    return 0
}
