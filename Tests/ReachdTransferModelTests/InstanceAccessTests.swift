import ReachdTransferModel
import XCTest
#if canImport(Glibc)
import Glibc
#endif

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

    /// Root's download into a directory the system instance may not write (the issue's /tmp): the refusal says the
    /// instance writes as its own user and names the ways out.
    func testTheSystemInstancesFileRefusalNamesItsUserAndTheWayOut() {
        let system = InstanceAccess.system(uid: 990, gid: 985, groupName: "reachd-transfers")
        for code in [EACCES, EPERM, EROFS] {
            let hint = system.fileRefusalHint(errno: code)
            XCTAssertTrue(hint.contains("writes as its own user, group reachd-transfers"), hint)
            XCTAssertTrue(hint.contains("chgrp reachd-transfers DIR; chmod 2775 DIR"), hint)
            XCTAssertTrue(hint.contains("ReadWritePaths=DIR"), hint)
            XCTAssertTrue(hint.contains("use your own instance"), hint)
        }
        XCTAssertEqual(system.fileRefusalHint(errno: ENOENT), "", "not a question of rights")
        XCTAssertEqual(InstanceAccess.user(uid: 1000).fileRefusalHint(errno: EACCES), "", "a user's own instance writes as that user")
    }
}
