import ReachdTransferModel
import XCTest

/// What the queue moved on a link counts until a budget count that holds it is seen.
final class UncountedBudgetBytesTests: XCTestCase {
    func testMovesCountUntilTheCountSeenHoldsThem() {
        var bytes = UncountedBudgetBytes()
        XCTAssertEqual(bytes.uncounted(on: "wwan0", used: 100), 0)
        bytes.started("a", at: 1_000)
        bytes.moved("a", to: 3_000, on: "wwan0")
        bytes.moved("a", to: 2_500, on: "wwan0")
        XCTAssertEqual(bytes.uncounted(on: "wwan0", used: 100), 2_000, "a position that goes back moves nothing")
        bytes.ended("a", at: 4_000, on: "wwan0")
        XCTAssertEqual(bytes.uncounted(on: "wwan0", used: 100), 3_500, "from 2,500 again to 4,000: moved over the wire again")
        XCTAssertEqual(bytes.uncounted(on: "wwan0", used: 1_100), 2_500, "the count grew by 1,000")
        XCTAssertEqual(bytes.uncounted(on: "wwan1", used: 0), 0, "another link")
        XCTAssertEqual(bytes.uncounted(on: "wwan0", used: nil), 2_500, "no budget known: kept")
        XCTAssertEqual(bytes.uncounted(on: "wwan0", used: 50), 0, "a count that went down began a new period")
        bytes.started("b", at: 0)
        bytes.moved("b", to: 500, on: nil)
        bytes.ended("b", at: 700, on: "wwan0")
        XCTAssertEqual(bytes.uncounted(on: "wwan0", used: 50), 200, "moves over an unknown link are not counted")
    }
}
