import ReachdTransferModel
import XCTest

/// Refresh checks of a completed download: conditional on the file in place, and the intervals `--refresh-every` takes.
final class RefreshRuleTests: XCTestCase {
    func testRefreshChecksAreConditionalOnTheFileInPlace() {
        let installed = Validators(etag: "\"v1\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")
        let byETag = ResumePlan.request(offset: 0, validators: Validators(), installed: installed)
        XCTAssertEqual(byETag.headers.map { "\($0.0): \($0.1)" }, ["If-None-Match: \"v1\""])
        let byDate = ResumePlan.request(offset: 0, validators: Validators(), installed: Validators(lastModified: installed.lastModified))
        XCTAssertEqual(byDate.headers.map { "\($0.0): \($0.1)" }, ["If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT"])
        // An interrupted refresh download resumes its own (new) version with Range, not conditionally.
        let resume = ResumePlan.request(offset: 10, validators: Validators(etag: "\"v2\""), installed: installed)
        XCTAssertEqual(resume.headers.map { "\($0.0): \($0.1)" }, ["Range: bytes=10-", "If-Range: \"v2\""])
        XCTAssertTrue(ResumePlan.request(offset: 0, validators: Validators(), installed: Validators()).headers.isEmpty)
    }

    func testRefreshIntervals() {
        let table: [(String, Int64?)] = [
            ("6h", 21600), ("15m", 900), ("90s", 90), ("2d", 172800), ("45", 45), ("1s", 1),
            ("0s", nil), ("h", nil), ("-5m", nil), ("1.5h", nil), ("366d", nil), ("", nil), ("6 h", nil), ("６h", nil),
        ]
        for (text, seconds) in table { XCTAssertEqual(RefreshInterval.seconds(text), seconds, text) }
    }
}
