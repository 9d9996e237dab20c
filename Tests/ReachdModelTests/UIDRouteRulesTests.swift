import ReachdModel
import XCTest

/// Which users the kernel routes alike: those whose uids lie in the same rules' ranges.
final class UIDRouteRulesTests: XCTestCase {
    func testUsersInTheSameRangesShareRoutes() {
        XCTAssertTrue(UIDRouteRules().sameRoutes(65534, as: 0), "no rule selects by uid")
        let rules = UIDRouteRules(ranges: [1000...1999, 1500...1500, 1000...1999])
        XCTAssertEqual(rules.ranges, [1000...1999, 1500...1500], "distinct and sorted")
        XCTAssertTrue(rules.sameRoutes(1001, as: 1999))
        XCTAssertFalse(rules.sameRoutes(1500, as: 1501), "one more rule holds 1500")
        XCTAssertFalse(rules.sameRoutes(1000, as: 0))
        XCTAssertTrue(rules.sameRoutes(65534, as: 0))
        XCTAssertTrue(rules.sameRoutes(.max, as: 999))
    }
}
