import XCTest
@testable import ReachdMonitor

final class RejudgeOrderTests: XCTestCase {
    private static func hosts(_ names: [String]) -> [String: Int] { Dictionary(uniqueKeysWithValues: names.map { ($0, 1) }) }

    func testRequestersTakeTurnsFewestFirstAndEachHostIsJudgedOnce() {
        let big = (0..<7).map { "b\($0)" } + ["shared"]
        let slices = RejudgeOrder.slices(of: [
            .user(1000): Self.hosts(big),
            .user(1001): Self.hosts(["one"]),
            .daemon: Self.hosts(["shared", "own"]),
        ], sliceSize: 3)
        XCTAssertEqual(slices, [["one"], ["own", "shared"], ["b0", "b1", "b2"], ["b3", "b4", "b5"], ["b6"]])
    }

    func testTwoLargeRequestersAlternate() {
        let slices = RejudgeOrder.slices(of: [
            .user(7): Self.hosts(["a1", "a2", "a3", "a4"]),
            .user(8): Self.hosts(["c1", "c2", "c3", "c4", "c5"]),
        ], sliceSize: 2)
        XCTAssertEqual(slices, [["a1", "a2"], ["c1", "c2"], ["a3", "a4"], ["c3", "c4"], ["c5"]])
    }

    func testNothingWatchedIsNoSlice() {
        XCTAssertEqual(RejudgeOrder.slices(of: [:]), [])
    }
}
