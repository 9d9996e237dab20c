import ReachdModel
import XCTest

/// The captive portal's counters are not a network change; the addresses an announced API may point at;
/// stale rounds of API answers.
final class CaptivePortalRulesTests: XCTestCase {
    private static let api = "https://portal.test/api"

    private func verdict(_ status: CaptivePortalStatus) -> Verdict {
        let snapshot = NetworkSnapshot(
            links: [Fixture.link(2, "wlan0")], addresses: [Fixture.v4(2, "192.0.2.2")],
            defaultRoutes: [Fixture.defaultRoute(via: "192.0.2.1", dev: 2)])
        var verdict = InternetVerdict().verdict(for: snapshot)
        verdict.captivePortal = CaptivePortal(apiURL: Self.api, status: status)
        return verdict
    }

    func testVerdictsDifferingOnlyInCountersAreNotANetworkChange() {
        let before = verdict(CaptivePortalStatus(captive: false, secondsRemaining: 100, bytesRemaining: 5_000))
        let after = verdict(CaptivePortalStatus(captive: false, secondsRemaining: 95, bytesRemaining: 4_000))
        XCTAssertTrue(after.differsOnlyInPortalCounters(from: before))
        XCTAssertFalse(before.differsOnlyInPortalCounters(from: before), "no difference at all")
        XCTAssertFalse(verdict(CaptivePortalStatus(captive: true, secondsRemaining: 95)).differsOnlyInPortalCounters(
            from: verdict(CaptivePortalStatus(captive: false, secondsRemaining: 100))), "captive changed")
        XCTAssertFalse(verdict(CaptivePortalStatus(captive: false, bytesRemaining: 1)).differsOnlyInPortalCounters(
            from: verdict(CaptivePortalStatus(captive: false))), "an allowance that appears is a change")
        var otherLink = after
        otherLink.interface = "eth0"
        XCTAssertFalse(otherLink.differsOnlyInPortalCounters(from: before))
    }

    func testTrackerTakesCountersWithoutANewSequence() {
        var tracker = VerdictTracker()
        let first = verdict(CaptivePortalStatus(captive: false, secondsRemaining: 100))
        XCTAssertEqual(tracker.record(first, at: Timestamp(microseconds: 1))?.sequence, 1)
        let ticked = verdict(CaptivePortalStatus(captive: false, secondsRemaining: 35))
        XCTAssertNil(tracker.record(ticked, at: Timestamp(microseconds: 2)), "counters alone: nothing to publish")
        XCTAssertEqual(tracker.current, StampedVerdict(verdict: ticked, sequence: 1, timestamp: Timestamp(microseconds: 1)))
        let again = verdict(CaptivePortalStatus(captive: false, secondsRemaining: 5))
        XCTAssertEqual(tracker.recordOutcome(again, at: Timestamp(microseconds: 3)),
                       .refreshed(StampedVerdict(verdict: again, sequence: 1, timestamp: Timestamp(microseconds: 1))))
        XCTAssertEqual(tracker.recordOutcome(again, at: Timestamp(microseconds: 4)), .unchanged)
        let expired = verdict(CaptivePortalStatus(captive: true, secondsRemaining: 0))
        XCTAssertEqual(tracker.record(expired, at: Timestamp(microseconds: 5))?.sequence, 2)
    }

    func testAddressesAnAnnouncedAPIMayNotPointAt() {
        let own: Set<IPAddress> = [IPAddress("192.0.2.2")!, IPAddress("2001:db8::2")!, IPAddress("127.0.0.1")!]
        let table: [(String, String?)] = [
            ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("::1", "loopback"),
            ("0.0.0.0", "unspecified (0.0.0.0/8)"), ("0.1.2.3", "unspecified (0.0.0.0/8)"), ("::", "unspecified"),
            ("169.254.1.1", "link-local"), ("fe80::1", "link-local"), ("febf::1", "link-local"),
            ("224.0.0.1", "multicast"), ("239.255.255.250", "multicast"), ("ff02::1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("::ffff:127.0.0.1", "loopback"), ("::ffff:169.254.0.1", "link-local"), ("::ffff:192.0.2.2", "an address of this host"),
            ("192.0.2.2", "an address of this host"), ("2001:db8::2", "an address of this host"),
            ("192.0.2.1", nil), ("10.0.0.1", nil), ("203.0.113.9", nil), ("2001:db8::1", nil), ("fec0::1", nil),
            ("::ffff:203.0.113.9", nil), ("126.255.255.255", nil), ("169.253.0.1", nil), ("223.255.255.255", nil),
        ]
        for (text, expected) in table {
            XCTAssertEqual(CaptivePortalTarget.refusal(of: IPAddress(text)!, ownAddresses: own), expected, text)
        }
    }

    func testTheFirstAcceptableAddressIsChosen() {
        let addresses = ["127.0.0.1", "fe80::1", "203.0.113.9", "2001:db8::1"].map { IPAddress($0)! }
        XCTAssertEqual(CaptivePortalTarget.choose(from: addresses, ownAddresses: []), .connect(IPAddress("203.0.113.9")!))
        XCTAssertEqual(CaptivePortalTarget.choose(from: Array(addresses.prefix(2)), ownAddresses: []),
                       .refused("127.0.0.1 is loopback, fe80::1 is link-local"))
        XCTAssertEqual(CaptivePortalTarget.choose(from: [], ownAddresses: []), .refused("no address"))
        let many = (1...6).map { IPAddress("127.0.0.\($0)")! }
        guard case .refused(let why) = CaptivePortalTarget.choose(from: many, ownAddresses: []) else { return XCTFail("accepted loopback") }
        XCTAssertTrue(why.hasSuffix("127.0.0.4 is loopback (and 2 more)"), why)
    }

    func testOwnAddressesComeFromTheSnapshot() {
        let snapshot = NetworkSnapshot(addresses: [Fixture.v4(2, "192.0.2.2"), Fixture.v6(3, "2001:db8::2")])
        XCTAssertEqual(snapshot.ownAddresses, [IPAddress("192.0.2.2")!, IPAddress("2001:db8::2")!])
    }

    func testAnswersOfAStaleRoundAreIgnored() {
        var answers = CaptivePortalAnswers()
        let captive = CaptivePortalStatus(captive: true)
        XCTAssertTrue(answers.take([Self.api: captive], round: 1))
        XCTAssertTrue(answers.take([:], round: 2), "round 2 starts by forgetting round 1's answer")
        XCTAssertFalse(answers.take([Self.api: captive], round: 1), "round 1 was cancelled; its answer lands late")
        XCTAssertEqual(answers.byURL, [:])
        XCTAssertEqual(answers.round, 2)
        let free = CaptivePortalStatus(captive: false)
        XCTAssertTrue(answers.take([Self.api: free], round: 2))
        XCTAssertFalse(answers.take([:], round: 1), "a stale round's start does not clear the newer answer")
        XCTAssertEqual(answers.byURL, [Self.api: free])
        XCTAssertFalse(answers.take([Self.api: free], round: 2), "the same answer again: no change")
    }
}
