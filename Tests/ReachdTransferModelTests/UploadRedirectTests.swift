import ReachdTransferModel
import XCTest

/// Where a redirect sends an upload: 307 and 308 only, `Location` resolved against the request's URL, http or https;
/// at most 5 times, never in a loop, never with credentials.
final class UploadRedirectTests: XCTestCase {
    private func target(_ status: Int, _ location: String?, from url: String = "http://mirror.test:8082/up/a.bin?x=1") -> String? {
        UploadRedirects.target(of: UploadAnswer(status: status, retryAfter: nil, location: location, snippet: []), from: url)
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

    private func answer(_ status: Int, _ location: String?) -> UploadAnswer {
        UploadAnswer(status: status, retryAfter: nil, location: location, snippet: [])
    }

    private func reason(_ step: UploadRedirects.Step) -> String? {
        guard case .finish(.failed(let reason)) = step else { return nil }
        return reason
    }

    func testTheLoopFollowsFiveRedirectsAndStopsAtTheSixth() {
        var redirects = UploadRedirects(from: "http://a.test/0")
        for hop in 1...5 {
            guard case .follow("http://a.test/\(hop)") = redirects.next(after: answer(307, "/\(hop)"), withCredentials: false, now: 0) else {
                return XCTFail("hop \(hop)")
            }
            XCTAssertEqual(redirects.current, "http://a.test/\(hop)")
        }
        XCTAssertEqual(reason(redirects.next(after: answer(308, "/6"), withCredentials: false, now: 0)),
                       "failed: more than 5 redirects, or a redirect loop")
    }

    func testALoopCredentialsAndFinalAnswersEndTheUpload() {
        var looping = UploadRedirects(from: "http://a.test/0")
        guard case .follow = looping.next(after: answer(307, "/1"), withCredentials: false, now: 0) else { return XCTFail() }
        XCTAssertEqual(reason(looping.next(after: answer(307, "/0"), withCredentials: false, now: 0)),
                       "failed: more than 5 redirects, or a redirect loop")
        var withCredentials = UploadRedirects(from: "https://a.test/0")
        XCTAssertEqual(reason(withCredentials.next(after: answer(307, "/1"), withCredentials: true, now: 0)), "failed: server answered 307")
        XCTAssertEqual(withCredentials.current, "https://a.test/0")
        var done = UploadRedirects(from: "https://a.test/0")
        guard case .finish(.uploaded(201, "")) = done.next(after: answer(201, "/1"), withCredentials: false, now: 0) else { return XCTFail() }
    }
}
