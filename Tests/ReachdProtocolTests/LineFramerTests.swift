import ReachdProtocol
import XCTest

final class LineFramerTests: XCTestCase {
    func testSplitsAcrossChunksAndStripsCR() {
        var framer = LineFramer(maximumLineLength: 100)
        XCTAssertEqual(framer.append(Array("{\"op\":".utf8)), [])
        XCTAssertEqual(framer.append(Array("1}\r\n\nab".utf8)), [.line(Array("{\"op\":1}".utf8)), .line([])])
        XCTAssertEqual(framer.bufferedByteCount, 2)
        XCTAssertEqual(framer.append(Array("c\n".utf8)), [.line(Array("abc".utf8))])
    }

    func testOversizedLineIsReportedOnceAndTheNextLineSurvives() {
        var framer = LineFramer(maximumLineLength: 8)
        XCTAssertEqual(framer.append(Array("0123456789".utf8)), [.oversized])
        XCTAssertEqual(framer.append(Array("more junk".utf8)), [])
        XCTAssertEqual(framer.bufferedByteCount, 0, "discarded bytes are not kept")
        XCTAssertEqual(framer.append(Array("tail\nok\n".utf8)), [.line(Array("ok".utf8))])
    }

    func testExactlyTheLimitIsAccepted() {
        var framer = LineFramer(maximumLineLength: 4)
        XCTAssertEqual(framer.append(Array("abcd\nabcde\n".utf8)), [.line(Array("abcd".utf8)), .oversized])
    }
}
