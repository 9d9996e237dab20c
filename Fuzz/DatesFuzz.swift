/// HTTP dates and durations: IMF-fixdate, delta-seconds, decimal lengths and Content-Range. No trap, and
/// whatever they return is in range.
@_cdecl("LLVMFuzzerTestOneInput")
public func datesFuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: count), as: UTF8.self)
    if let seconds = HTTPDate.unixSeconds(text), !(-62_167_219_200...253_402_300_799).contains(seconds) { fatalError("date out of range") }
    if let seconds = deltaSeconds(text), !(0...(1 << 31)).contains(seconds) { fatalError("delta-seconds out of range") }
    if let number = decimal(text), number < 0 { fatalError("negative decimal") }
    if let range = ContentRange(text) {
        if let first = range.first, let last = range.last, first > last { fatalError("inverted range") }
        if let last = range.last, let total = range.total, last >= total { fatalError("range past the total") }
    }
    _ = RetryPolicy.retryAfterSeconds(text, now: 0)
    return 0
}
