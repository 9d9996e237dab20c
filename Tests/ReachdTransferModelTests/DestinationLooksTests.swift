import ReachdTransferModel
import XCTest

/// One look at a time per destination, again after 30 s, a look without an answer for 5 s shown as such, and
/// a bound on the looks under way.
final class DestinationLooksTests: XCTestCase {
    private let second: UInt64 = 1_000_000_000

    func testALookAtATimeAgainAfterThirtySecondsAndNotAnsweringAfterFive() {
        var looks = DestinationLooks()
        let first = looks.answer(for: "/srv", now: 0)
        XCTAssertEqual(first.answer, .reading)
        XCTAssertTrue(first.look)
        XCTAssertFalse(looks.answer(for: "/srv", now: 0).look, "one look under way")
        XCTAssertEqual(looks.answer(for: "/srv", now: 4 * second).answer, .reading)
        XCTAssertEqual(looks.answer(for: "/srv", now: 5 * second).answer, .notAnswering)
        looks.looked("/srv", bytes: 1000, now: 6 * second)
        XCTAssertEqual(looks.answer(for: "/srv", now: 6 * second).answer, .free(1000))
        XCTAssertEqual(looks.answer(for: "/srv", now: 35 * second).look, false)
        let again = looks.answer(for: "/srv", now: 36 * second)
        XCTAssertEqual(again.answer, .free(1000), "the last reading while the next look is under way")
        XCTAssertTrue(again.look)
        XCTAssertEqual(looks.answer(for: "/srv", now: 41 * second).answer, .notAnswering)
        looks.looked("/srv", bytes: nil, now: 42 * second)
        XCTAssertEqual(looks.answer(for: "/srv", now: 42 * second).answer, .free(nil))
    }

    func testADirectoryThatDoesNotAnswerHoldsOnlyItself() {
        var looks = DestinationLooks()
        XCTAssertTrue(looks.answer(for: "/mnt/nfs", now: 0).look)
        XCTAssertEqual(looks.answer(for: "/mnt/nfs", now: 10 * second).answer, .notAnswering)
        XCTAssertTrue(looks.answer(for: "/srv", now: 10 * second).look)
        looks.looked("/srv", bytes: 5, now: 10 * second)
        XCTAssertEqual(looks.answer(for: "/srv", now: 10 * second).answer, .free(5))
    }

    func testLooksUnderWayAreBounded() {
        var looks = DestinationLooks()
        for index in 0..<DestinationLooks.maximumLooking { XCTAssertTrue(looks.answer(for: "/d\(index)", now: 0).look) }
        let over = looks.answer(for: "/more", now: 0)
        XCTAssertEqual(over.answer, .free(nil), "never read, and no look can start: unreadable")
        XCTAssertFalse(over.look)
        looks.looked("/d0", bytes: 1, now: second)
        XCTAssertTrue(looks.answer(for: "/more", now: second).look)
    }
}
