import ReachdModel
import XCTest

final class ChangeCoalescerTests: XCTestCase {
    private let ms: UInt64 = 1_000_000

    func testFirstChangeIsReportedAtOnceAndTheBurstAfterItAtTheDeadline() {
        var coalescer = ChangeCoalescer(intervalNanoseconds: 100 * ms)
        XCTAssertNil(coalescer.deadline, "listening before any change")
        XCTAssertTrue(coalescer.observed(changes: true, at: 1_000 * ms))
        XCTAssertEqual(coalescer.deadline, 1_100 * ms)
        XCTAssertEqual(coalescer.millisecondsToDeadline(from: 1_040 * ms), 60)
        // The owner does not listen before the deadline; at it, it finds the burst's changes and reports them once.
        XCTAssertTrue(coalescer.observed(changes: true, at: 1_100 * ms))
        XCTAssertEqual(coalescer.deadline, 1_200 * ms, "a burst that goes on keeps one report per interval")
        // Nothing more came: listening again, and the next change is reported at once.
        XCTAssertFalse(coalescer.observed(changes: false, at: 1_200 * ms))
        XCTAssertNil(coalescer.deadline)
        XCTAssertNil(coalescer.millisecondsToDeadline(from: 1_300 * ms))
        XCTAssertTrue(coalescer.observed(changes: true, at: 5_000 * ms))
    }

    func testAnEarlyWakeUpWithoutChangesKeepsTheDeadline() {
        var coalescer = ChangeCoalescer(intervalNanoseconds: 100 * ms)
        _ = coalescer.observed(changes: true, at: 0)
        XCTAssertFalse(coalescer.observed(changes: false, at: 50 * ms))
        XCTAssertEqual(coalescer.deadline, 100 * ms)
        XCTAssertEqual(coalescer.millisecondsToDeadline(from: 150 * ms), 0, "a passed deadline is due at once")
    }

    func testDeadlineRoundsUpToWholeMilliseconds() {
        var coalescer = ChangeCoalescer(intervalNanoseconds: 100 * ms)
        _ = coalescer.observed(changes: true, at: 0)
        XCTAssertEqual(coalescer.millisecondsToDeadline(from: 99 * ms + 1), 1, "never wakes before the deadline")
    }

    func testABurstAllowanceReportsIsolatedChangesAtOnceAndASteadyStreamOncePerInterval() {
        var coalescer = ChangeCoalescer(intervalNanoseconds: 100 * ms, burst: 3)
        XCTAssertTrue(coalescer.observed(changes: true, at: 0))
        XCTAssertNil(coalescer.deadline, "two more reports are allowed: still listening")
        XCTAssertTrue(coalescer.observed(changes: true, at: 10 * ms))
        XCTAssertTrue(coalescer.observed(changes: true, at: 20 * ms))
        XCTAssertEqual(coalescer.deadline, 100 * ms, "the allowance is spent: gathering until a token is back")
        XCTAssertTrue(coalescer.observed(changes: true, at: 100 * ms))
        XCTAssertEqual(coalescer.deadline, 200 * ms, "a stream that goes on: one report per interval")
        XCTAssertFalse(coalescer.observed(changes: false, at: 200 * ms))
        XCTAssertNil(coalescer.deadline)
        // After a quiet second the whole allowance is back.
        for step: UInt64 in 0..<3 { XCTAssertTrue(coalescer.observed(changes: true, at: 1_500 * ms + step * ms)) }
        XCTAssertNotNil(coalescer.deadline)
    }

    func testChangesSeenBeforeTheirTurnAreReportedAtTheDeadline() {
        var coalescer = ChangeCoalescer(intervalNanoseconds: 100 * ms)
        XCTAssertTrue(coalescer.observed(changes: true, at: 0))
        XCTAssertFalse(coalescer.observed(changes: true, at: 50 * ms), "too early: gathered")
        XCTAssertEqual(coalescer.deadline, 100 * ms)
        XCTAssertTrue(coalescer.observed(changes: false, at: 100 * ms), "what was gathered is reported, though nothing new came")
    }
}
