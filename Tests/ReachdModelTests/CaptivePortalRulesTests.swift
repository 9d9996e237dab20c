import ReachdModel
import XCTest

/// The captive portal's counters are not a network change; stale rounds of API answers.
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
