import ReachdTransferModel
import XCTest

/// A yielding upload's window in user space: a piece goes only when what the kernel holds leaves room for it, the wait
/// follows the rate the server acknowledges, and pieces are whole segments, a quarter of the window.
final class SendWindowTests: XCTestCase {
    func testAPieceGoesWhenItFitsOrWhenNothingIsHeld() {
        let window = SendWindow()
        XCTAssertNil(window.wait(queued: 30_000, adding: 10_000, window: 40_000))
        XCTAssertNil(window.wait(queued: 0, adding: 100_000, window: 40_000), "a piece larger than the window goes alone")
        XCTAssertEqual(window.wait(queued: 30_001, adding: 10_000, window: 40_000), 0.002, "no rate known yet")
    }

    func testTheWaitIsWhatTheExcessTakesToDrainWithinOneToTenMilliseconds() throws {
        var window = SendWindow()
        window.read(acknowledged: 1_000, now: 1)
        XCTAssertEqual(window.drainRate, 0, "one reading is no rate")
        window.read(acknowledged: 26_000, now: 1.01)
        XCTAssertEqual(window.drainRate, 2_500_000, accuracy: 1)
        // 10 KB over at 2.5 MB/s: 4 ms.
        XCTAssertEqual(try XCTUnwrap(window.wait(queued: 40_000, adding: 10_000, window: 40_000)), 0.004, accuracy: 1e-9)
        XCTAssertEqual(window.wait(queued: 40_000, adding: 1, window: 40_000), 0.001)
        XCTAssertEqual(window.wait(queued: 4_000_000, adding: 10_000, window: 40_000), 0.01)
        // Later readings move the rate by an eighth; a count that goes back is not a reading of a rate.
        window.read(acknowledged: 26_000, now: 1.02)
        XCTAssertEqual(window.drainRate, 2_500_000 * 0.875, accuracy: 1)
        window.read(acknowledged: 5, now: 1.03)
        XCTAssertEqual(window.drainRate, 2_500_000 * 0.875, accuracy: 1)
    }

    func testPiecesAreAQuarterOfTheWindowInWholeSegments() {
        XCTAssertEqual(SendWindow.pieceBytes(window: 40_000, segment: 1448, largest: 4 << 20), 8688)
        XCTAssertEqual(SendWindow.pieceBytes(window: 2896, segment: 1448, largest: 4 << 20), 1448, "one segment at least")
        XCTAssertEqual(SendWindow.pieceBytes(window: 8 << 20, segment: 1448, largest: 1 << 20), 1 << 20)
        XCTAssertEqual(SendWindow.pieceBytes(window: 40_000, segment: 0, largest: 1 << 20), 10_000)
    }
}
