import ReachdModel
import XCTest

/// The cost mapping (docs/protocol.md): metered state × roaming × budget state → level and flags, as a table.
final class ConnectionCostTests: XCTestCase {
    func testTable() {
        typealias Row = (MeteredState, Bool, BudgetState?, CostLevel, [String], metered: Bool)
        let rows: [Row] = [
            (.no, false, nil, .unrestricted, [], false),
            (.guessNo, false, nil, .unrestricted, [], false),
            (.unknown, false, nil, .unrestricted, [], false),
            (.yes, false, nil, .fixed, [], true),
            (.guessYes, false, nil, .fixed, [], true),
            (.no, false, .below, .fixed, [], false),
            (.no, false, .approaching, .fixed, ["approachingDataLimit"], false),
            (.no, false, .over, .fixed, ["overDataLimit"], true),
            (.yes, false, .approaching, .fixed, ["approachingDataLimit"], true),
            (.yes, false, .over, .fixed, ["overDataLimit"], true),
            (.no, true, nil, .variable, ["roaming"], true),
            (.guessYes, true, nil, .variable, ["roaming"], true),
            (.yes, true, .below, .variable, ["roaming"], true),
            (.yes, true, .approaching, .variable, ["roaming", "approachingDataLimit"], true),
            (.guessNo, true, .over, .variable, ["roaming", "overDataLimit"], true),
        ]
        for (state, roaming, budget, level, flags, metered) in rows {
            let cost = ConnectionCost(meteredState: state, roaming: roaming, budget: budget)
            let row = "\(state) roaming=\(roaming) budget=\(budget.map(\.rawValue) ?? "none")"
            XCTAssertEqual(cost.level, level, row)
            XCTAssertEqual(cost.flagNames, flags, row)
            XCTAssertEqual(cost.roaming, roaming, row)
            XCTAssertEqual(ConnectionCost.countsAsMetered(meteredState: state, roaming: roaming, budget: budget), metered, row)
        }
    }

    /// The verdict's cost follows the link's facts in the snapshot, and is nil when not reachable.
    func testVerdictCostFromSnapshot() {
        let link = LinkInfo(index: 2, name: "wwan0", flags: [.up, .running, .lowerUp], carrier: true)
        var snapshot = NetworkSnapshot(
            links: [link], addresses: [InterfaceAddress(interfaceIndex: 2, address: IPAddress("203.0.113.12")!, prefixLength: 24)],
            defaultRoutes: [Route(family: .ipv4, nexthops: [Nexthop(interfaceIndex: 2, gateway: IPAddress("203.0.113.1"))])]
        )
        var verdict = InternetVerdict().verdict(for: snapshot)
        XCTAssertEqual(verdict.cost, ConnectionCost(level: .fixed), "wwan is metered by its kind")
        XCTAssertFalse(verdict.roaming)
        snapshot.roaming["wwan0"] = .modemManager
        snapshot.roaming["wwan1"] = .modemManager
        verdict = InternetVerdict().verdict(for: snapshot)
        XCTAssertEqual(verdict.roamingSource, .modemManager)
        XCTAssertEqual(verdict.cost, ConnectionCost(level: .variable, roaming: true))
        XCTAssertEqual(verdict.summary, "reachable via WWAN (wwan0), metered (interface kind wwan), roaming (ModemManager)")
        snapshot.roaming = ["wwan1": .modemManager]
        XCTAssertNil(InternetVerdict().verdict(for: snapshot).roamingSource, "another link roams")
        snapshot.roaming["wwan0"] = .modemManager
        snapshot.links[2]?.flags = []
        verdict = InternetVerdict().verdict(for: snapshot)
        XCTAssertFalse(verdict.reachable)
        XCTAssertNil(verdict.cost)
        XCTAssertNil(verdict.roamingSource, "an unreachable path does not roam")
    }
}
