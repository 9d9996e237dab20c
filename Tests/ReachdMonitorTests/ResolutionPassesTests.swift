import XCTest
@testable import ReachdMonitor

/// However often the network changes, watched hosts are resolved again by one pass at a time, and by one more
/// pass when it changed during the running one.
final class ResolutionPassesTests: XCTestCase {
    func testChangesDuringAPassMakeExactlyOneMorePass() {
        var passes = ResolutionPasses()
        XCTAssertTrue(passes.networkChanged(), "the first change starts a pass")
        for _ in 0..<1000 { XCTAssertFalse(passes.networkChanged(), "a change during a pass starts no other") }
        XCTAssertTrue(passes.passEnded(), "one more pass for all the changes during the first")
        XCTAssertFalse(passes.passEnded(), "and no third")
        XCTAssertFalse(passes.running)
    }

    func testAQuietPassEndsAndTheNextChangeStartsAnew() {
        var passes = ResolutionPasses()
        XCTAssertTrue(passes.networkChanged())
        XCTAssertFalse(passes.passEnded())
        XCTAssertTrue(passes.networkChanged())
        XCTAssertTrue(passes.running)
    }
}
