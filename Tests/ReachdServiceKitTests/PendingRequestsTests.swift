import ReachdServiceKit
import XCTest

/// The per-connection rule both daemons follow: at `limit` requests waiting the socket is not read, and it is read
/// again once one is answered and no line read before is still held.
final class PendingRequestsTests: XCTestCase {
    private enum Step {
        case start, answer
        case resume(linesHeld: Int)
    }

    func testTheSocketStopsWhenFullAndIsReadAgainWithRoomAndNoLineHeld() {
        var pending = PendingRequests(limit: 2)
        // step, what it answers (stop reading / read again), then waiting and paused
        let table: [(Step, Bool, Int, Bool)] = [
            (.start, false, 1, false),
            (.resume(linesHeld: 0), false, 1, false), // not paused: nothing to resume
            (.start, true, 2, true), // the window fills: stop reading
            (.start, false, 3, true), // a line of the same read still starts; stopped once
            (.resume(linesHeld: 0), false, 3, true), // no room
            (.answer, false, 2, true),
            (.resume(linesHeld: 0), false, 2, true), // still full
            (.answer, false, 1, true),
            (.resume(linesHeld: 1), false, 1, true), // a line read before waits to be handled
            (.resume(linesHeld: 0), true, 1, false),
            (.resume(linesHeld: 0), false, 1, false), // once
            (.answer, false, 0, false),
            (.answer, false, 0, false), // never below none
            (.start, false, 1, false),
            (.start, true, 2, true), // and full again
        ]
        for (index, (step, expected, waiting, paused)) in table.enumerated() {
            let answer: Bool
            switch step {
            case .start: answer = pending.started()
            case .answer:
                pending.answered()
                answer = false
            case .resume(let linesHeld): answer = pending.shouldResume(linesHeld: linesHeld)
            }
            XCTAssertEqual(answer, expected, "step \(index)")
            XCTAssertEqual(pending.waiting, waiting, "step \(index)")
            XCTAssertEqual(pending.readingPaused, paused, "step \(index)")
            XCTAssertEqual(pending.hasRoom, waiting < 2, "step \(index)")
        }
    }

    func testALimitBelowOneIsOne() {
        var pending = PendingRequests(limit: 0)
        XCTAssertEqual(pending.limit, 1)
        XCTAssertTrue(pending.started())
    }
}
