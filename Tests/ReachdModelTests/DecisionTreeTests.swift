import ReachdModel
import XCTest

/// The seeds' decision tree (DIGEST.md), row by row.
final class DecisionTreeTests: XCTestCase {
    func testTable() {
        let table: [(ReachabilityFlags, ClassicStatus)] = [
            ([], .notReachable),
            ([.isWWAN], .notReachable),
            ([.connectionRequired, .isWWAN], .notReachable),
            ([.reachable], .reachableViaWiFi),
            ([.reachable, .isDirect], .reachableViaWiFi),
            ([.reachable, .connectionRequired], .notReachable),
            ([.reachable, .connectionRequired, .connectionOnDemand], .reachableViaWiFi),
            ([.reachable, .connectionRequired, .connectionOnTraffic], .reachableViaWiFi),
            ([.reachable, .connectionRequired, .connectionOnTraffic, .interventionRequired], .notReachable),
            ([.reachable, .isWWAN], .reachableViaWWAN),
            ([.reachable, .connectionRequired, .isWWAN], .reachableViaWWAN),
        ]
        for (flags, expected) in table {
            XCTAssertEqual(ClassicStatus(flags: flags), expected, "\(flags.names)")
        }
    }

    func testFlagNamesRoundTrip() {
        let all = ReachabilityFlags(ReachabilityFlags.named.map(\.flag))
        XCTAssertEqual(ReachabilityFlags(names: all.names), all)
        XCTAssertNil(ReachabilityFlags(names: ["reachable", "bogus"]))
        XCTAssertEqual(ReachabilityFlags([.isWWAN, .reachable]).names, ["reachable", "isWWAN"])
    }
}
