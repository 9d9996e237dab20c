import ReachdModel

/// Cache-Control, Expires, Date and Age as the offline cache reads them: no input may trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func cacheControlFuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let fields = fuzzFields(data, count, fields: 4)
    let directives = CacheControl(fields[0])
    let now = Timestamp(microseconds: 1_700_000_000_000_000)
    let freshness = CacheFreshness(directives, expires: fields[1], date: fields[2], age: fields[3], now: now)
    if let until = freshness.freshUntil, until <= now { fatalError("fresh until the past") }
    if directives.noStore || directives.noCache, freshness.freshUntil != nil { fatalError("no-store/no-cache made fresh") }
    _ = freshness.isFresh(at: Timestamp(microseconds: .max))
    return 0
}
