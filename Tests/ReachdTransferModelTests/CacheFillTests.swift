import ReachdTransferModel
import XCTest

/// The offline cache's GET: conditional on what is stored, and what the answer's head means for it.
final class CacheFillTests: XCTestCase {
    func testTheRequestIsConditionalOnTheETagElseOnLastModified() {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        let table: [(cached: Validators?, fields: [String])] = [
            (nil, []),
            (Validators(), []),
            (Validators(etag: "\"a\"", lastModified: date), ["If-None-Match: \"a\""]),
            (Validators(lastModified: date), ["If-Modified-Since: \(date)"]),
        ]
        for row in table {
            XCTAssertEqual(CacheFill.conditionalFields(row.cached).map { "\($0.name): \($0.value)" }, row.fields, "\(String(describing: row.cached))")
        }
    }

    func testTheHeadDecidesWhatIsStored() {
        let table: [(status: Int, headers: [(name: String, value: String)], conditional: Bool, limit: Int64?, head: CacheFill.Head)] = [
            (304, [], true, nil, .notModified),
            (304, [], false, nil, .failed("the server answered 304 to an unconditional request")),
            (404, [("Content-Length", "99999")], false, 10, .answered),
            (200, [("Content-Encoding", "gzip")], false, nil,
             .failed("the server sent the body with Content-Encoding gzip although identity was asked for")),
            (200, [("Content-Encoding", "identity"), ("Content-Length", "10")], false, 10, .store(length: 10)),
            (200, [("Content-Length", "11")], false, 10, .tooLarge(11)),
            (200, [], false, 10, .tooLarge(nil)),
            (200, [], true, nil, .store(length: nil)),
        ]
        for row in table {
            XCTAssertEqual(CacheFill.judge(status: row.status, headers: row.headers, conditional: row.conditional, limit: row.limit), row.head,
                           "\(row.status) \(row.headers)")
        }
    }

    func testAShortBodyAndAFailedRequestAreReported() {
        XCTAssertEqual(CacheFill.shortBody(written: 5, length: 10), "connection closed after 5 of 10 bytes")
        XCTAssertNil(CacheFill.shortBody(written: 10, length: 10))
        XCTAssertNil(CacheFill.shortBody(written: 5, length: nil))
        XCTAssertEqual(CacheFill.failure(.failed(reason: "failed: TLS: x")), "failed: TLS: x")
        XCTAssertEqual(CacheFill.failure(.retry(reason: "network error: reset", retryAfter: nil)), "network error: reset")
        XCTAssertEqual(CacheFill.failure(.stopped), "stopped")
    }
}
