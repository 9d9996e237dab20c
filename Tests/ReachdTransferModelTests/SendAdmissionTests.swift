import ReachdTransferModel
import XCTest

/// A yielding upload's window in user space: a piece goes only when what the kernel holds leaves room for it, the wait
/// follows the rate the server acknowledges, and pieces are whole segments, a quarter of the window.
final class SendAdmissionTests: XCTestCase {
    func testAPieceGoesWhenItFitsOrWhenNothingIsHeld() {
        let admission = SendAdmission()
        XCTAssertNil(admission.wait(queued: 30_000, adding: 10_000, window: 40_000))
        XCTAssertNil(admission.wait(queued: 0, adding: 100_000, window: 40_000), "a piece larger than the window goes alone")
        XCTAssertEqual(admission.wait(queued: 30_001, adding: 10_000, window: 40_000), 0.002, "no rate known yet")
    }

    func testTheWaitIsWhatTheExcessTakesToDrainWithinOneToTenMilliseconds() throws {
        var admission = SendAdmission()
        admission.read(acknowledged: 1_000, now: 1)
        XCTAssertEqual(admission.drainRate, 0, "one reading is no rate")
        admission.read(acknowledged: 26_000, now: 1.01)
        XCTAssertEqual(admission.drainRate, 2_500_000, accuracy: 1)
        // 10 KB over at 2.5 MB/s: 4 ms.
        XCTAssertEqual(try XCTUnwrap(admission.wait(queued: 40_000, adding: 10_000, window: 40_000)), 0.004, accuracy: 1e-9)
        XCTAssertEqual(admission.wait(queued: 40_000, adding: 1, window: 40_000), 0.001)
        XCTAssertEqual(admission.wait(queued: 4_000_000, adding: 10_000, window: 40_000), 0.01)
        // Later readings move the rate by an eighth; a count that goes back is not a reading of a rate.
        admission.read(acknowledged: 26_000, now: 1.02)
        XCTAssertEqual(admission.drainRate, 2_500_000 * 0.875, accuracy: 1)
        admission.read(acknowledged: 5, now: 1.03)
        XCTAssertEqual(admission.drainRate, 2_500_000 * 0.875, accuracy: 1)
    }

    func testWhatTheKernelHoldsIsSentLessRetransmittedAndAcknowledgedPlusNotSent() {
        XCTAssertEqual(SendAdmission.held(sent: 150_000, retransmitted: 10_000, acknowledged: 100_000, unacknowledgedSegments: 9,
                                          segment: 1448, notSent: 5_000), 45_000)
        // Before Linux 4.19 (no byte counts): the unacknowledged segments.
        XCTAssertEqual(SendAdmission.held(sent: 0, retransmitted: 0, acknowledged: 100_000, unacknowledgedSegments: 3, segment: 1448,
                                          notSent: 0), 4344)
        // Counts that do not add up (acknowledged past what was sent, more retransmitted than sent) hold nothing in flight.
        XCTAssertEqual(SendAdmission.held(sent: 100, retransmitted: 0, acknowledged: 101, unacknowledgedSegments: 0, segment: 1448,
                                          notSent: 7), 7)
        XCTAssertEqual(SendAdmission.held(sent: 100, retransmitted: 200, acknowledged: 0, unacknowledgedSegments: 0, segment: 1448,
                                          notSent: 0), 0)
        XCTAssertEqual(SendAdmission.held(sent: .max, retransmitted: 0, acknowledged: 0, unacknowledgedSegments: .max, segment: .max,
                                          notSent: .max), (1 << 40) + Int(UInt32.max))
    }

    func testPiecesAreAQuarterOfTheWindowInWholeSegments() {
        XCTAssertEqual(SendAdmission.pieceBytes(window: 40_000, segment: 1448, largest: 4 << 20), 8688)
        XCTAssertEqual(SendAdmission.pieceBytes(window: 2896, segment: 1448, largest: 4 << 20), 1448, "one segment at least")
        XCTAssertEqual(SendAdmission.pieceBytes(window: 8 << 20, segment: 1448, largest: 1 << 20), 1 << 20)
        XCTAssertEqual(SendAdmission.pieceBytes(window: 40_000, segment: 0, largest: 1 << 20), 10_000)
    }
}
