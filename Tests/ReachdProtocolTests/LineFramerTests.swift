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

final class LineFramerChunkingTests: XCTestCase {
    /// However the stream is cut (and whatever collection carries it), the frames are the same.
    func testEveryCutOfTheStreamGivesTheSameFrames() {
        let stream = Array("ab\r\n0123456789xyz\n\nabcd\r\nabcde\nabcdef\nlast\r".utf8)
        let expected: [LineFramer.Frame] = [
            .line(Array("ab".utf8)), .oversized, .line([]), .line(Array("abcd".utf8)), .line(Array("abcde".utf8)), .oversized,
        ]
        for cut in 0...stream.count {
            for second in cut...stream.count {
                var framer = LineFramer(maximumLineLength: 5)
                let frames = framer.append(stream[..<cut]) + framer.append(NonContiguousBytes(stream[cut..<second]))
                    + framer.append(stream[second...])
                XCTAssertEqual(frames, expected, "cut at \(cut) and \(second)")
                XCTAssertEqual(framer.bufferedByteCount, 5, "`last\\r` is held until its newline")
            }
        }
    }
}

/// A collection without contiguous storage, to take the framer's other path.
private struct NonContiguousBytes: Collection {
    let base: [UInt8]
    init(_ slice: ArraySlice<UInt8>) { base = Array(slice) }
    var startIndex: Int { base.startIndex }
    var endIndex: Int { base.endIndex }
    func index(after i: Int) -> Int { i + 1 }
    subscript(position: Int) -> UInt8 { base[position] }
}
