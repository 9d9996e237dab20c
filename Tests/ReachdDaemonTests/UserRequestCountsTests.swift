import XCTest
@testable import ReachdDaemon

final class UserRequestCountsTests: XCTestCase {
    func testEachUserHasItsOwnBoundOfWaitingRequests() {
        var counts = UserRequestCounts(perUser: 2)
        XCTAssertTrue(counts.admit(uid: 1001))
        XCTAssertTrue(counts.admit(uid: 1001))
        XCTAssertFalse(counts.admit(uid: 1001), "a third waiting request of the same user")
        XCTAssertTrue(counts.admit(uid: 1000), "another user is not held by the first one's count")
        counts.release(uid: 1001)
        XCTAssertTrue(counts.admit(uid: 1001))
        counts.release(uid: 1001)
        counts.release(uid: 1001)
        counts.release(uid: 1000)
        XCTAssertEqual(counts, UserRequestCounts(perUser: 2), "nothing kept for users with nothing waiting")
        counts.release(uid: 7)
        XCTAssertEqual(counts, UserRequestCounts(perUser: 2), "a release without a request changes nothing")
    }

    func testEachUserHasItsOwnBoundOfWatchedHosts() {
        var counts = UserRequestCounts(perUser: 2, watchedPerUser: 10)
        XCTAssertTrue(counts.watch(uid: 1001, count: 6))
        XCTAssertFalse(counts.watch(uid: 1001, count: 5), "past the bound: nothing counted")
        XCTAssertEqual(counts.watched[1001], 6)
        XCTAssertTrue(counts.watch(uid: 1001, count: 4), "up to the bound exactly")
        XCTAssertFalse(counts.watch(uid: 1001, count: 1))
        XCTAssertTrue(counts.watch(uid: 1000, count: 10), "another user is not held by the first one's count")
        counts.unwatch(uid: 1001, count: 4)
        XCTAssertTrue(counts.watch(uid: 1001, count: 4), "a closed connection's hosts are free again")
        counts.unwatch(uid: 1001, count: 10)
        counts.unwatch(uid: 1000, count: 10)
        XCTAssertEqual(counts, UserRequestCounts(perUser: 2, watchedPerUser: 10), "nothing kept for users who watch nothing")
        counts.unwatch(uid: 7, count: 3)
        XCTAssertEqual(counts, UserRequestCounts(perUser: 2, watchedPerUser: 10), "an unwatch without a watch changes nothing")
    }
}
