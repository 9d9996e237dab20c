import ReachdTransferModel
import XCTest

/// An upload's outcome by the server's answer; a failure's reason quotes the answer's start, safe for a terminal.
final class UploadAnswerTests: XCTestCase {
    private func outcome(_ status: Int, _ body: String, retryAfter: String? = nil) -> FetchOutcome {
        UploadAnswer(status: status, retryAfter: retryAfter, location: nil, snippet: Array(body.utf8)).outcome(now: 0)
    }

    private func reason(_ status: Int, _ body: String) -> String? {
        guard case .failed(let reason) = outcome(status, body) else { return nil }
        return reason
    }

    func testAFailureQuotesTheAnswerOnOneLineWithControlCharactersEscaped() {
        XCTAssertEqual(reason(403, "\u{1b}]52;c;cm0gLXJmIH4K\u{07}\r\n\t denied\u{9b}31m\u{202e}\n"),
                       "failed: server answered 403: \\x1b]52;c;cm0gLXJmIH4K\\x07 denied\\u{9b}31m\\u{202e}")
        XCTAssertEqual(reason(404, "<html>\r\n<head><title>404 Not Found</title></head>\r\n"),
                       "failed: server answered 404: <html> <head><title>404 Not Found</title></head>")
        XCTAssertEqual(reason(302, ""), "failed: server answered 302")
        XCTAssertEqual(reason(400, " \r\n "), "failed: server answered 400")
        XCTAssertEqual(reason(400, String(repeating: "é", count: 300)), "failed: server answered 400: " + String(repeating: "é", count: 200))
    }

    func testSuccessKeepsTheAnswerAsItIsAndServerErrorsAreRetried() {
        guard case .uploaded(201, "{\"a\":\n\u{1b}1}") = outcome(201, "{\"a\":\n\u{1b}1}") else { return XCTFail("\(outcome(201, ""))") }
        guard case .retry("server answered 503", 120?) = outcome(503, "x", retryAfter: "120") else { return XCTFail("\(outcome(503, "x"))") }
        guard case .retry("server answered 429", nil) = outcome(429, "") else { return XCTFail("\(outcome(429, ""))") }
    }

    func testTheSnippetKeepsTheFirstKiBAcrossParts() {
        var answer = UploadAnswer(status: 200, headers: [(name: "retry-after", value: "5"), (name: "LOCATION", value: "/x")])
        XCTAssertEqual([answer.retryAfter, answer.location], ["5", "/x"])
        XCTAssertFalse(answer.keep(Array(repeating: UInt8(ascii: "a"), count: 1000)))
        XCTAssertTrue(answer.keep(Array(repeating: UInt8(ascii: "b"), count: 100)))
        XCTAssertEqual(answer.snippet.count, UploadAnswer.snippetBytes)
        XCTAssertEqual(answer.snippet, Array(repeating: UInt8(ascii: "a"), count: 1000) + Array(repeating: UInt8(ascii: "b"), count: 24))
    }
}
