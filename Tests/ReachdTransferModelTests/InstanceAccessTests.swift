import ReachdTransferModel
import XCTest

final class InstanceAccessTests: XCTestCase {
    func testAUsersInstanceServesThatUserOnly() {
        let access = InstanceAccess.user(uid: 1000)
        XCTAssertTrue(access.admits(Owner(uid: 1000, gid: 1000)))
        XCTAssertFalse(access.admits(Owner(uid: 0, gid: 0)), "not even root: it has the system instance")
        XCTAssertFalse(access.admits(Owner(uid: 1001, gid: 1000, groups: [1000])), "sharing the group is not enough")
        XCTAssertTrue(access.refusal(for: Owner(uid: 1001, gid: 1001)).contains("uid 1001 is not allowed"))
    }

    func testTheSystemInstanceServesRootItselfAndItsGroup() {
        let access = InstanceAccess.system(uid: 990, gid: 985, groupName: "reachd-transfers")
        XCTAssertTrue(access.admits(Owner(uid: 0, gid: 0)))
        XCTAssertTrue(access.admits(Owner(uid: 990, gid: 985)))
        XCTAssertTrue(access.admits(Owner(uid: 1000, gid: 1000, groups: [1000, 985])), "a member by supplementary group")
        XCTAssertTrue(access.admits(Owner(uid: 1000, gid: 985)), "a member by effective group")
        XCTAssertFalse(access.admits(Owner(uid: 1000, gid: 1000, groups: [1000, 27])))
        XCTAssertTrue(access.refusal(for: Owner(uid: 1000, gid: 1000)).contains("members of the group reachd-transfers"))
    }
}
