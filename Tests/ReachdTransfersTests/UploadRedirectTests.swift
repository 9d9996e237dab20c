import XCTest
@testable import ReachdTransfers

/// Where a redirect sends an upload: 307 and 308 only, `Location` resolved against the request's URL, http or https.
final class UploadRedirectTests: XCTestCase {
    private func target(_ status: Int, _ location: String?, from url: String = "http://mirror.test:8082/up/a.bin?x=1") -> String? {
        Fetcher.redirectTarget(of: UploadAnswer(status: status, retryAfter: nil, location: location, snippet: []), from: url)
    }

    func testA307Or308IsFollowedToAnHttpOrHttpsURL() {
        XCTAssertEqual(target(307, "/landed.bin"), "http://mirror.test:8082/landed.bin")
        XCTAssertEqual(target(308, "b.bin?y=2"), "http://mirror.test:8082/up/b.bin?y=2")
        XCTAssertEqual(target(307, "https://other.test/put"), "https://other.test/put")
        XCTAssertEqual(target(308, "//other.test:81/p"), "http://other.test:81/p")
    }

    func testOtherStatusesSchemesAndMissingLocationsAreNotFollowed() {
        for status in [200, 201, 301, 302, 303, 304, 400] { XCTAssertNil(target(status, "/landed.bin"), "\(status)") }
        XCTAssertNil(target(307, nil))
        XCTAssertNil(target(307, "ftp://mirror.test/a.bin"))
        XCTAssertNil(target(307, "file:///etc/passwd"))
    }
}
