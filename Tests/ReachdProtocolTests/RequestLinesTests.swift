import ReachdProtocol
import XCTest

/// How both daemons read request lines: too long is an error to answer, blank is nothing, the rest is a request.
final class RequestLinesTests: XCTestCase {
    func testLongLinesAreErrorsAndBlankLinesAreSkipped() {
        var lines = RequestLines()
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: maximumRequestLineLength + 1)
        let frames = lines.append(Array("{\"op\":\"ping\"}\r\n \t\n\n".utf8) + long + Array("\n{}\n".utf8))
        XCTAssertEqual(frames, [
            .success(Array("{\"op\":\"ping\"}".utf8)),
            .failure(ProtocolError(.lineTooLong, "request lines are limited to 16384 bytes")),
            .success(Array("{}".utf8)),
        ])
    }

    func testALineOfExactlyTheLimitIsARequest() {
        var lines = RequestLines()
        let longest = [UInt8](repeating: UInt8(ascii: "x"), count: maximumRequestLineLength)
        XCTAssertEqual(lines.append(longest + [UInt8(ascii: "\n")]), [.success(longest)])
    }
}
