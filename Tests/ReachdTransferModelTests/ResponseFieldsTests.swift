import ReachdTransferModel
import XCTest

/// A response's header fields as the attempts read them: names without case, the first of repeated fields.
final class ResponseFieldsTests: XCTestCase {
    private let older = "Sun, 06 Nov 1994 08:49:37 GMT", later = "Sun, 06 Nov 1994 08:49:38 GMT"

    func testTheFirstFieldOfANameIsFoundWithoutCase() {
        let headers = [(name: "etag", value: "\"a\""), (name: "ETag", value: "\"b\""), (name: "Content-Length", value: "12")]
        XCTAssertEqual(headers.firstValue(named: "ETAG"), "\"a\"")
        XCTAssertEqual(headers.firstValue(named: "content-length"), "12")
        XCTAssertNil(headers.firstValue(named: "Content-Lengt"))
        XCTAssertNil(headers.firstValue(named: "Étag"))
    }

    func testValidatorsFromHeadersJudgeLastModifiedAgainstDate() {
        let table: [(headers: [(name: String, value: String)], validators: Validators)] = [
            ([], Validators()),
            ([("ETag", "\"v1\"")], Validators(etag: "\"v1\"")),
            ([("etag", "W/\"v1\""), ("last-modified", older), ("date", later)],
             Validators(etag: "W/\"v1\"", lastModified: older, lastModifiedIsStrong: true)),
            ([("Last-Modified", older), ("Date", older)], Validators(lastModified: older, lastModifiedIsStrong: false)),
            ([("Last-Modified", older)], Validators(lastModified: older, lastModifiedIsStrong: false)),
            ([("Last-Modified", later), ("Date", older)], Validators(lastModified: later, lastModifiedIsStrong: false)),
            ([("Last-Modified", "yesterday"), ("Date", later)], Validators(lastModified: "yesterday", lastModifiedIsStrong: false)),
        ]
        for row in table { XCTAssertEqual(Validators(headers: row.headers), row.validators, "\(row.headers)") }
    }

    func testADownloadsHeadIsReadFromItsFields() {
        let head = ResumePlan.Response(status: 206, headers: [
            (name: "content-length", value: "10"), (name: "Content-Range", value: "bytes 5-14/15"), (name: "Retry-After", value: "3"),
            (name: "Content-Encoding", value: "gzip"), (name: "ETag", value: "\"e\""),
        ])
        XCTAssertEqual(head, ResumePlan.Response(status: 206, contentLength: 10, contentRange: "bytes 5-14/15", retryAfter: "3",
                                                 contentEncoding: "gzip", validators: Validators(etag: "\"e\"")))
        XCTAssertNil(ResumePlan.Response(status: 200, headers: [(name: "Content-Length", value: "1, 1")]).contentLength)
    }
}
