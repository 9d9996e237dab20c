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
}
