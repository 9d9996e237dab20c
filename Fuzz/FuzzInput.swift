/// The fuzzer's bytes as header values: split at 0xFF (a byte no header value holds), decoded leniently, as a
/// server's bytes reach the parsers after the HTTP client.
func fuzzFields(_ data: UnsafePointer<UInt8>, _ count: Int, fields: Int) -> [String?] {
    let bytes = UnsafeBufferPointer(start: data, count: count)
    var values: [String?] = bytes.split(separator: 0xFF, maxSplits: fields - 1, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
    while values.count < fields { values.append(nil) }
    // An empty field stands for an absent header.
    return values.map { $0?.isEmpty == true ? nil : $0 }
}
