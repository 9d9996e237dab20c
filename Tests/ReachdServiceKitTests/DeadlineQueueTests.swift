@testable import ReachdServiceKit
import XCTest

/// When the timer thread sleeps, how long, and when a change must wake it.
final class DeadlineQueueTests: XCTestCase {
    func testTheThreadSleepsTowardsTheEarliestDeadlineAndWithoutLimitWhenNoneIsLeft() {
        var queue = DeadlineQueue<String>()
        XCTAssertEqual(queue.sleep(now: 0), -1)
        let first = queue.add("a", at: 10_000_000)
        XCTAssertTrue(first.wake, "a thread asleep without a limit wakes for a deadline")
        XCTAssertEqual(queue.sleep(now: 0), 10)
        let later = queue.add("b", at: 20_000_000)
        XCTAssertFalse(later.wake, "a later deadline waits its turn")
        XCTAssertTrue(queue.add("c", at: 5_500_000).wake, "an earlier one shortens the sleep")
        XCTAssertEqual(queue.sleep(now: 0), 6, "rounded up: never woken before the deadline")
        XCTAssertEqual(queue.takeDue(now: 10_000_000), ["c", "a"])
        XCTAssertEqual(queue.sleep(now: 10_000_000), 10)
        XCTAssertTrue(queue.remove(later.token), "the last one taken back: the thread must not wake for it")
        XCTAssertEqual(queue.sleep(now: 10_000_000), -1)
        XCTAssertNil(queue.sleepingUntil)
    }

    func testTakingBackOneOfSeveralDoesNotWakeTheThread() {
        var queue = DeadlineQueue<Int>()
        let one = queue.add(1, at: 1_000)
        _ = queue.add(2, at: 2_000)
        _ = queue.sleep(now: 0)
        XCTAssertFalse(queue.remove(one.token))
        XCTAssertFalse(queue.remove(one.token), "taken back twice")
        XCTAssertEqual(queue.takeDue(now: 1_500), [])
        XCTAssertEqual(queue.sleep(now: 1_500), 1)
        XCTAssertEqual(queue.takeDue(now: 2_000), [2])
        XCTAssertTrue(queue.isEmpty)
    }
}
