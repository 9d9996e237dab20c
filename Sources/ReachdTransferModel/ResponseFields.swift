/// Header fields as async-http-client and SwiftNIO hand them over: `(name, value)` pairs in the order received.
extension Sequence where Element == (name: String, value: String) {
    /// The value of the first field called `name`, the name compared without ASCII case (as `HTTPHeaders.first(name:)`).
    public func firstValue(named name: String) -> String? {
        first { field in
            field.name.utf8.count == name.utf8.count && zip(field.name.utf8, name.utf8).allSatisfy { lowercase($0) == lowercase($1) }
        }?.value
    }
}

private func lowercase(_ byte: UInt8) -> UInt8 {
    byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte
}

extension Validators {
    /// The validators of a response with `headers`: its `ETag`, and its `Last-Modified` judged strong or not against its `Date`.
    public init(headers: some Sequence<(name: String, value: String)>) {
        self.init(etag: headers.firstValue(named: "ETag"), lastModified: headers.firstValue(named: "Last-Modified"),
                  date: headers.firstValue(named: "Date"))
    }
}

extension ResumePlan.Response {
    /// The head of a download's answer with `status` and `headers`.
    public init(status: Int, headers: some Sequence<(name: String, value: String)>) {
        self.init(
            status: status,
            contentLength: ReachdTransferModel.contentLength(headers.firstValue(named: "Content-Length")),
            contentRange: headers.firstValue(named: "Content-Range"),
            retryAfter: headers.firstValue(named: "Retry-After"),
            contentEncoding: headers.firstValue(named: "Content-Encoding"),
            validators: Validators(headers: headers)
        )
    }
}
