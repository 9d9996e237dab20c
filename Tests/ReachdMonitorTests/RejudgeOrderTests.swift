import XCTest
@testable import ReachdMonitor

final class RejudgeOrderTests: XCTestCase {
    private static func hosts(_ names: [String]) -> [String: Int] { Dictionary(uniqueKeysWithValues: names.map { ($0, 1) }) }

    private static func slice(_ requester: ResolutionRequester, _ hosts: [String]) -> RejudgeOrder.Slice {
        RejudgeOrder.Slice(requester: requester, hosts: hosts)
    }

    func testRequestersTakeTurnsFewestFirstEachWithItsOwnHosts() {
        let big = (0..<7).map { "b\($0)" } + ["shared"]
        let slices = RejudgeOrder.slices(of: [
            .user(1000): Self.hosts(big),
            .user(1001): Self.hosts(["one"]),
            .daemon: Self.hosts(["shared", "own"]),
        ], sliceSize: 3)
        XCTAssertEqual(slices, [
            Self.slice(.user(1001), ["one"]), Self.slice(.daemon, ["own", "shared"]), Self.slice(.user(1000), ["b0", "b1", "b2"]),
            Self.slice(.user(1000), ["b3", "b4", "b5"]), Self.slice(.user(1000), ["b6", "shared"]),
        ], "a host two requesters watch is in a slice of each")
    }

    func testTwoLargeRequestersAlternate() {
        let slices = RejudgeOrder.slices(of: [
            .user(7): Self.hosts(["a1", "a2", "a3", "a4"]),
            .user(8): Self.hosts(["c1", "c2", "c3", "c4", "c5"]),
        ], sliceSize: 2)
        XCTAssertEqual(slices, [
            Self.slice(.user(7), ["a1", "a2"]), Self.slice(.user(8), ["c1", "c2"]), Self.slice(.user(7), ["a3", "a4"]),
            Self.slice(.user(8), ["c3", "c4"]), Self.slice(.user(8), ["c5"]),
        ])
    }

    func testNothingWatchedIsNoSlice() {
        XCTAssertEqual(RejudgeOrder.slices(of: [:]), [])
    }
}
