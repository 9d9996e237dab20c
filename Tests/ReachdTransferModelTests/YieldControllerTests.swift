import ReachdTransferModel
import XCTest

/// The receive window of a background download (rLEDBAT, RFC 9840): it grows while the path's queue stays below the
/// target, shrinks as far as the queue passes it, and never leaves its bounds.
final class YieldControllerTests: XCTestCase {
    private let segment = 1448

    func testTheWindowGrowsOnAnEmptyPathUpToTheBuffer() {
        var controller = YieldController(maximum: 128 << 10, segment: segment, now: 0)
        XCTAssertEqual(controller.window, 13107)
        XCTAssertFalse(controller.isYielding)
        var now = 0.0
        for _ in 0..<200 {
            now += 0.02
            _ = controller.sample(rtt: 0.002, now: now)
        }
        XCTAssertEqual(controller.window, 128 << 10)
        XCTAssertFalse(controller.isYielding)
        XCTAssertEqual(controller.baseDelay, 0.002)
    }

    func testAQueuePastTheTargetHalvesTheWindowAtMostDownToTwoSegments() throws {
        var controller = YieldController(maximum: 128 << 10, segment: segment, now: 0)
        _ = controller.sample(rtt: 0.002, now: 0.02)
        let before = controller.window
        // 40 ms of queue: far past the 15 ms target, the window halves.
        XCTAssertEqual(try XCTUnwrap(controller.sample(rtt: 0.042, now: 0.1)), before / 2)
        XCTAssertTrue(controller.isYielding)
        var now = 0.1
        for _ in 0..<50 {
            now += 0.05
            _ = controller.sample(rtt: 0.042, now: now)
        }
        XCTAssertEqual(controller.window, 2 * segment)
        // A queue just under the target grows it slowly.
        let held = controller.window
        now += 0.05
        XCTAssertEqual(controller.sample(rtt: 0.002 + 0.9 * YieldController.target, now: now), held + Int(0.1 * Double(4 * segment)))
        XCTAssertFalse(controller.isYielding)
    }

    func testTheWindowMovesOncePerRoundTripAndTheBaseForgetsOldMinutes() {
        var controller = YieldController(maximum: 128 << 10, segment: segment, now: 0)
        XCTAssertNotNil(controller.sample(rtt: 0.05, now: 0.06))
        // Within one round trip of the last step: no change.
        XCTAssertNil(controller.sample(rtt: 0.05, now: 0.08))
        XCTAssertNil(controller.sample(rtt: 0, now: 1))
        XCTAssertNil(controller.sample(rtt: .nan, now: 1))
        XCTAssertEqual(controller.baseDelay, 0.05)
        // Ten minutes on, a path whose round trip is 80 ms has that as its base.
        _ = controller.sample(rtt: 0.08, now: 660)
        XCTAssertEqual(controller.baseDelay, 0.08)
    }
}

extension YieldControllerTests {
    func testTheWindowNeverFallsBelowTwoOfTheServersSegments() {
        var controller = YieldController(maximum: 128 << 10, now: 0)
        // A loopback's segments: two of them pass the buffer, so the window is never held below it.
        controller.use(segment: 65483)
        XCTAssertEqual(controller.window, 2 * 65483)
        XCTAssertEqual(controller.sample(rtt: 0.001, now: 1), 128 << 10)
        // Far past the target, and no lower than two segments.
        XCTAssertEqual(controller.sample(rtt: 0.5, now: 2), 2 * 65483)
        XCTAssertNil(controller.sample(rtt: 0.5, now: 3))
    }
}
