import ReachdTransferModel
import XCTest

/// The receive window of a background download (rLEDBAT, RFC 9840): it grows while the path's queue stays below the
/// target, shrinks as far as the queue passes it, and never leaves its bounds.
final class YieldControllerTests: XCTestCase {
    private let segment = 1448

    /// `times` samples of `rtt`, 20 ms apart from the start.
    private func sample(_ controller: inout YieldController, rtt: Double, times: Int) {
        for step in 1...times { _ = controller.sample(rtt: rtt, now: Double(step) * 0.02) }
    }

    func testTheWindowGrowsOnAnEmptyPathUpToTheBuffer() {
        var controller = YieldController(maximum: 128 << 10, segment: segment, now: 0)
        XCTAssertEqual(controller.window, 13107)
        XCTAssertFalse(controller.isYielding)
        sample(&controller, rtt: 0.002, times: 200)
        XCTAssertEqual(controller.window, 128 << 10)
        XCTAssertFalse(controller.isYielding)
        XCTAssertEqual(controller.baseDelay, 0.002)
    }

    func testAnUploadsWindowStartsWhereItIsToldWithinItsBounds() {
        XCTAssertEqual(YieldController(maximum: 4 << 20, initial: 64 << 10, segment: segment, now: 0).window, 64 << 10)
        XCTAssertEqual(YieldController(maximum: 4 << 20, initial: 100, segment: segment, now: 0).window, 4 * segment)
        XCTAssertEqual(YieldController(maximum: 64 << 10, initial: 1 << 20, segment: segment, now: 0).window, 64 << 10)
    }

    func testASlowStartDoublesTheWindowUntilTheQueueNearsTheTarget() throws {
        var controller = YieldController(maximum: 4 << 20, initial: 64 << 10, segment: segment, slowStart: true, now: 0)
        XCTAssertTrue(controller.isStarting)
        XCTAssertEqual(controller.sample(rtt: 0.001, now: 0.01), 128 << 10)
        XCTAssertNil(controller.sample(rtt: 0.001, now: 0.015), "once per round trip, every 10 ms at most")
        XCTAssertEqual(controller.sample(rtt: 0.001, now: 0.02), 256 << 10)
        // Three quarters of the target: the start is over, and the window grows by segments from there.
        XCTAssertEqual(controller.sample(rtt: 0.001 + 0.8 * YieldController.target, now: 0.04), (256 << 10) + Int(0.2 * Double(4 * segment)))
        XCTAssertFalse(controller.isStarting)
        XCTAssertEqual(controller.sample(rtt: 0.001, now: 0.06), (256 << 10) + Int(0.2 * Double(4 * segment)) + 4 * segment)

        // On an empty path it stops at the largest window.
        var fast = YieldController(maximum: 4 << 20, initial: 64 << 10, segment: segment, slowStart: true, now: 0)
        sample(&fast, rtt: 0.0001, times: 8)
        XCTAssertEqual(fast.window, 4 << 20)
        XCTAssertFalse(fast.isStarting)
        // Without it (a download's), the window grows by segments from the start.
        var download = YieldController(maximum: 128 << 10, segment: segment, now: 0)
        XCTAssertFalse(download.isStarting)
        XCTAssertEqual(download.sample(rtt: 0.001, now: 0.01), 13107 + 4 * segment)
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
