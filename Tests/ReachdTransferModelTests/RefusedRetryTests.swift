import ReachdTransferModel
import XCTest

/// When `HostSubscriptions` asks its caller (`ReachdVerdicts`) to retry the hosts reachd refused: one retry pending
/// at a time, 5 s after the refusal that found none pending; the retry queues the refused hosts again.
final class RefusedRetryTests: XCTestCase {
    private enum Event {
        /// A caller watches these hosts; every step then planned is answered by reachd.
        case watch([String])
        /// The retry timer fired (`retryRefused()`); every step then planned is answered by reachd.
        case retryFired
    }

    private struct Row {
        var event: Event
        /// reachd's answer to every step planned after the event: a refusal, or nil (taken).
        var refusal: String?
        /// The hosts of each step planned, in order.
        var steps: [[String]]
        /// What `finished` said after each of those steps.
        var followUps: [HostSubscriptions.FollowUp]
        /// The hosts refused afterwards.
        var refused: Set<String>
        var pending: Bool
    }

    func testOneRetryIsPendingAtATimeAndItQueuesTheRefusedHostsAgain() {
        let retry = HostSubscriptions.FollowUp.retryRefused(after: .seconds(5))
        let no = "no verdict yet: the daemon is starting"
        let table: [Row] = [
            // Taken: nothing to retry.
            Row(event: .watch(["a"]), refusal: nil, steps: [["a"]], followUps: [.none], refused: [], pending: false),
            // The first refusal asks for a retry; the second step's, while it is pending, asks for none.
            Row(event: .watch(["b", "c", "d"]), refusal: no, steps: [["b", "c"], ["d"]], followUps: [retry, .none],
                refused: ["b", "c", "d"], pending: true),
            // Refused again before the retry fired: still the one retry.
            Row(event: .watch(["e"]), refusal: no, steps: [["e"]], followUps: [.none], refused: ["b", "c", "d", "e"], pending: true),
            // The retry fires: the refused hosts are asked for again; refused again, another retry.
            Row(event: .retryFired, refusal: no, steps: [["b", "c"], ["d", "e"]], followUps: [retry, .none],
                refused: ["b", "c", "d", "e"], pending: true),
            // It fires and reachd takes them: nothing more.
            Row(event: .retryFired, refusal: nil, steps: [["b", "c"], ["d", "e"]], followUps: [.none, .none], refused: [], pending: false),
            Row(event: .watch(["f"]), refusal: nil, steps: [["f"]], followUps: [.none], refused: [], pending: false),
            // No refusal pending: a retry that fires anyway plans nothing.
            Row(event: .retryFired, refusal: nil, steps: [], followUps: [], refused: [], pending: false),
            // A refusal after all that asks for a retry again.
            Row(event: .watch(["g"]), refusal: no, steps: [["g"]], followUps: [retry], refused: ["g"], pending: true),
        ]
        var plan = HostSubscriptions(perConnection: 64, batch: 2)
        plan.opened(plan.reserve())
        for (index, row) in table.enumerated() {
            switch row.event {
            case .watch(let hosts): plan.watch(hosts)
            case .retryFired: plan.retryRefused()
            }
            var steps: [[String]] = [], followUps: [HostSubscriptions.FollowUp] = []
            while let step = plan.next(), steps.count < 10 {
                steps.append(step.hosts)
                followUps.append(plan.finished(step, refusal: row.refusal))
            }
            XCTAssertEqual(steps, row.steps, "row \(index)")
            XCTAssertEqual(followUps, row.followUps, "row \(index)")
            XCTAssertEqual(Set(plan.refused.keys), row.refused, "row \(index)")
            XCTAssertEqual(plan.refusedRetryPending, row.pending, "row \(index)")
        }
    }

    /// A reset (reachd went away) does not end the pending retry: its timer still runs, and fires once.
    func testAResetKeepsThePendingRetry() {
        var plan = HostSubscriptions(perConnection: 64, batch: 2)
        plan.opened(plan.reserve())
        plan.watch(["a"])
        let first = plan.next()!
        XCTAssertEqual(plan.finished(first, refusal: "no"), .retryRefused(after: .seconds(5)))
        plan.reset()
        plan.opened(plan.reserve())
        let again = plan.next()!
        XCTAssertEqual(again.hosts, ["a"])
        XCTAssertEqual(plan.finished(again, refusal: "no"), .none, "the retry asked for before the reset is still pending")
        plan.retryRefused()
        let retried = plan.next()!
        XCTAssertEqual(retried.hosts, ["a"])
        XCTAssertEqual(plan.finished(retried, refusal: "no"), .retryRefused(after: .seconds(5)))
    }
}
