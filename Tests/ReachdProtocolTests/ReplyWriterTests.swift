import Foundation
import ReachdModel
import ReachdProtocol
import XCTest

/// The hand-written reply encoder against the Decodable reader and a fixed expectation.
final class ReplyWriterTests: XCTestCase {
    private func hostVerdict(reason: String) -> StampedVerdict {
        var verdict = HostVerdict().verdict(
            host: "mirror.test", resolution: .addresses([IPAddress("2001:db8::5")!, IPAddress("198.18.0.5")!]),
            decisions: [:], in: NetworkSnapshot())
        verdict.reason = reason
        return StampedVerdict(verdict: verdict, sequence: 12, timestamp: Timestamp(microseconds: 1_795_319_522_000_001))
    }

    func testEscapesAndRoundTrips() throws {
        let tricky = "quote \" backslash \\ newline \n tab \t bell \u{07} é ✓"
        let stamped = hostVerdict(reason: tricky)
        let line = Reply.subscribed(id: .string("a\"b"), verdicts: [stamped]).encodedLine()
        XCTAssertEqual(line.filter { $0 == 10 }.count, 1, "one line")
        XCTAssertEqual(try Reply.decode(line: Array(line.dropLast())), .subscribed(id: .string("a\"b"), verdicts: [stamped]))
        let text = String(decoding: line, as: UTF8.self)
        XCTAssertTrue(text.contains(#"bell \u0007 é ✓"#), text)
        XCTAssertTrue(text.contains(#""addresses":["2001:db8::5","198.18.0.5"]"#), text)
    }

    func testInternetVerdictShape() {
        let stamped = StampedVerdict(verdict: InternetVerdict().verdict(for: NetworkSnapshot()), sequence: 1,
                                     timestamp: Timestamp(microseconds: 0))
        let nobody = #"{"flags":[],"gateway":null,"interface":null,"kind":null,"kindSource":null,"metered":false,"meteredReason":null,"#
            + #""meteredSource":null,"meteredState":"unknown","metric":null,"reachable":false,"#
        XCTAssertEqual(stamped.json, #"{"captivePortal":null,"classicStatus":"notReachable","connectivity":"unknown","cost":null,"family":null,"flags":[],"#
            + #""interface":null,"ipv4":"#
            + nobody + #""reason":"no IPv4 default route","reasonCode":"no-route","status":"unreachable"},"ipv6":"#
            + nobody + #""reason":"no IPv6 default route","reasonCode":"no-route","status":"unreachable"},"metered":false,"meteredReason":null,"#
            + #""meteredSource":null,"meteredState":"unknown","#
            + #""reachable":false,"reason":"no IPv4 default route","reasonCode":"no-route","roaming":false,"roamingSource":null,"sequence":1,"status":"unreachable","target":"internet","#
            + #""timestamp":"1970-01-01T00:00:00.000000Z"}"#)
    }

    func testEveryControlCharacterIsEscapedAndRoundTrips() throws {
        let controls = String(decoding: (0..<0x20).map { UInt8($0) } + [0x22, 0x5C, 0x41], as: UTF8.self)
        let stamped = hostVerdict(reason: controls)
        let text = stamped.json
        XCTAssertTrue(text.contains(#""reason":"\u0000\u0001"#), text)
        XCTAssertTrue(text.contains(#"\u0008\t\n\u000b\u000c\r\u000e"#), text)
        XCTAssertTrue(text.contains(#"\u001f\"\\A","#), text)
        let line = Reply.event(verdict: stamped).encodedLine()
        XCTAssertEqual(try Reply.decode(line: Array(line.dropLast())), .event(verdict: stamped))
    }

    func testFlagsAreWrittenInTheirNamedOrderAndRoundTrip() throws {
        var stamped = hostVerdict(reason: "r")
        stamped.verdict.flags = [.isDirect, .reachable, .transientConnection]
        stamped.verdict.ipv4.flags = [.reachable]
        let text = stamped.json
        XCTAssertTrue(text.contains(#""flags":["reachable","transientConnection","isDirect"],"#), text)
        XCTAssertTrue(text.contains(#""ipv4":{"flags":["reachable"],"#), text)
        XCTAssertTrue(text.contains(#""ipv6":{"flags":[],"#), text)
        XCTAssertTrue(text.hasSuffix(#""timestamp":"2026-11-22T03:52:02.000001Z"}"#), text)
        let line = Reply.event(verdict: stamped).encodedLine()
        XCTAssertEqual(try Reply.decode(line: Array(line.dropLast())), .event(verdict: stamped))
    }

    /// The metered state and source, and a captive portal before and after its API answered, are written and read back.
    func testMeteredStateAndCaptivePortalRoundTrip() throws {
        let link = LinkInfo(index: 2, name: "dhcp0", flags: [.up, .running, .lowerUp], carrier: true)
        var snapshot = NetworkSnapshot(links: [link], addresses: [InterfaceAddress(interfaceIndex: 2, address: IPAddress("203.0.113.12")!, prefixLength: 24)],
                                       defaultRoutes: [Route(family: .ipv4, nexthops: [Nexthop(interfaceIndex: 2, gateway: IPAddress("203.0.113.1"))])])
        snapshot.networkd[2] = NetworkdLinkFacts(androidMetered: true, captivePortal: "https://portal.test:8443/capport")
        var stamped = StampedVerdict(verdict: InternetVerdict().verdict(for: snapshot), sequence: 3, timestamp: Timestamp(microseconds: 0))
        XCTAssertEqual(stamped.verdict.meteredSource, .dhcp)
        XCTAssertTrue(stamped.json.contains(#""captivePortal":{"apiURL":"https://portal.test:8443/capport","bytesRemaining":null,"#
            + #""canExtendSession":null,"captive":null,"secondsRemaining":null,"userPortalURL":null,"venueInfoURL":null}"#), stamped.json)
        XCTAssertTrue(stamped.json.contains(#""meteredSource":"DHCP","meteredState":"guess-yes""#), stamped.json)
        let unanswered = stamped
        snapshot.portalStatus["https://portal.test:8443/capport"] = CaptivePortalStatus(
            captive: false, userPortalURL: "https://portal.test:8443/login", canExtendSession: true, secondsRemaining: 600, bytesRemaining: 1_000_000_000)
        stamped.verdict = InternetVerdict().verdict(for: snapshot)
        XCTAssertTrue(stamped.json.contains(#""bytesRemaining":1000000000,"canExtendSession":true,"captive":false,"secondsRemaining":600,"#), stamped.json)
        for verdict in [unanswered, stamped] {
            let line = Reply.subscribed(id: .number(1), verdicts: [verdict]).encodedLine()
            XCTAssertEqual(try Reply.decode(line: Array(line.dropLast())), .subscribed(id: .number(1), verdicts: [verdict]))
        }
    }

    /// The budget of the path's link is written with the verdict, read back, and absent where the link has none.
    func testBudgetRoundTrips() throws {
        let link = LinkInfo(index: 2, name: "wwan0", flags: [.up, .running, .lowerUp], carrier: true)
        var snapshot = NetworkSnapshot(links: [link], addresses: [InterfaceAddress(interfaceIndex: 2, address: IPAddress("203.0.113.12")!, prefixLength: 24)],
                                       defaultRoutes: [Route(family: .ipv4, nexthops: [Nexthop(interfaceIndex: 2, gateway: IPAddress("203.0.113.1"))])])
        XCTAssertFalse(StampedVerdict(verdict: InternetVerdict().verdict(for: snapshot), sequence: 1, timestamp: Timestamp(microseconds: 0)).json.contains("budget"))
        snapshot.budgets["wwan0"] = BudgetStatus(state: .approaching, usedBytes: 4_600_000_000, limitBytes: 5_000_000_000, period: "month",
                                                 resetsAt: Timestamp(rfc3339: "2026-11-30T23:00:00Z")!)
        let stamped = StampedVerdict(verdict: InternetVerdict().verdict(for: snapshot), sequence: 2, timestamp: Timestamp(microseconds: 0))
        XCTAssertTrue(stamped.json.contains(#""budget":{"limitBytes":5000000000,"period":"month","resetsAt":"2026-11-30T23:00:00.000000Z","#
            + #""state":"approaching","usedBytes":4600000000},"captivePortal":null"#), stamped.json)
        let line = Reply.event(verdict: stamped).encodedLine()
        XCTAssertEqual(try Reply.decode(line: Array(line.dropLast())), .event(verdict: stamped))
    }

    /// A link on a roaming modem with a budget: `roaming` with its source and the cost object are written, and read back.
    func testRoamingAndCostRoundTrip() throws {
        let link = LinkInfo(index: 2, name: "wwan0", flags: [.up, .running, .lowerUp], carrier: true)
        var snapshot = NetworkSnapshot(links: [link], addresses: [InterfaceAddress(interfaceIndex: 2, address: IPAddress("203.0.113.12")!, prefixLength: 24)],
                                       defaultRoutes: [Route(family: .ipv4, nexthops: [Nexthop(interfaceIndex: 2, gateway: IPAddress("203.0.113.1"))])])
        var stamped = StampedVerdict(verdict: InternetVerdict().verdict(for: snapshot), sequence: 1, timestamp: Timestamp(microseconds: 0))
        XCTAssertTrue(stamped.json.contains(#""cost":{"approachingDataLimit":false,"level":"fixed","overDataLimit":false,"roaming":false}"#), stamped.json)
        XCTAssertTrue(stamped.json.contains(#""roaming":false,"roamingSource":null"#), stamped.json)
        snapshot.roaming["wwan0"] = .modemManager
        snapshot.budgets["wwan0"] = BudgetStatus(state: .over, usedBytes: 6, limitBytes: 5, period: "day", resetsAt: Timestamp(microseconds: 0))
        stamped.verdict = InternetVerdict().verdict(for: snapshot)
        XCTAssertTrue(stamped.json.contains(#""cost":{"approachingDataLimit":false,"level":"variable","overDataLimit":true,"roaming":true}"#), stamped.json)
        XCTAssertTrue(stamped.json.contains(#""roaming":true,"roamingSource":"ModemManager""#), stamped.json)
        let line = Reply.event(verdict: stamped).encodedLine()
        XCTAssertEqual(try Reply.decode(line: Array(line.dropLast())), .event(verdict: stamped))
        struct CostOnly: Decodable { let cost: ConnectionCost? }
        XCTAssertEqual(try JSONDecoder().decode(CostOnly.self, from: Data(stamped.json.utf8)).cost, stamped.verdict.cost)
    }
}
