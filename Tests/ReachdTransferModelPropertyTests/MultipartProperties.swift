import PropertyBased
import ReachdTransferModel
import Testing

/// The multipart boundary scan, over generated bodies fed in generated pieces: it finds the delimiter exactly
/// when a plain search of the whole body does.
@Suite struct MultipartProperties {
    /// Bytes from a small alphabet that shares the delimiter's bytes, so that partial matches are frequent.
    static let body = Gen.element(of: Array("\r\n-ab".utf8)).map { $0 ?? 0 }.array(of: 0...300)

    @Test func theScanFindsTheDelimiterExactlyWhenItIsThere() async {
        let delimiter = Array("\r\n--ab".utf8)
        await propertyCheck(input: Self.body, Gen.int(in: 1...64), Gen.bool) { body, piece, planted in
            var bytes = body
            if planted { bytes.insert(contentsOf: delimiter, at: bytes.count / 2) }
            var scanner = DelimiterScanner(delimiter)
            var found = false
            for start in stride(from: 0, to: bytes.count, by: piece) where !found {
                found = scanner.feed(bytes[start..<min(start + piece, bytes.count)])
            }
            let expected = bytes.count >= delimiter.count
                && (0...(bytes.count - delimiter.count)).contains { Array(bytes[$0..<$0 + delimiter.count]) == delimiter }
            #expect(found == expected)
        }
    }
}
