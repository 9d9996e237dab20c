import ReachdModel
import ReachdTransferModel
import XCTest

/// What the transfer service keeps per host, however many hosts clients name (issue 22): the scheduler's
/// verdicts (`JobHosts`) and the subscriptions to reachd (`HostSubscriptions`).
final class HostBoundsTests: XCTestCase {
    private var sequence: UInt64 = 0

    private func verdict(_ host: String) -> StampedVerdict {
        sequence += 1
        let verdict = HostVerdict().verdict(host: host, resolution: .failed("test"), decisions: [:], in: NetworkSnapshot(links: []))
        return StampedVerdict(verdict: verdict, sequence: sequence, timestamp: Timestamp(microseconds: Int64(sequence)))
    }

    // MARK: JobHosts

    func testJobHostsKeepOnlyHostsALiveJobNeeds() {
        var table = JobHosts()
        XCTAssertTrue(table.add(job: "a", host: "h1"), "first job of h1: watch it")
        XCTAssertFalse(table.add(job: "b", host: "h1"), "h1 is watched already")
        XCTAssertFalse(table.add(job: "a", host: "h2"), "a job keeps its host")
        XCTAssertTrue(table.record([verdict("h1"), verdict("elsewhere")]))
        XCTAssertEqual(table.verdictCount, 1, "a host no job needs is not kept")
        XCTAssertNil(table.remove(job: "a"), "b still needs h1")
        XCTAssertNotNil(table.verdict(forHost: "h1"))
        XCTAssertEqual(table.remove(job: "b"), "h1", "the last job of h1: stop watching it")
        XCTAssertNil(table.verdict(forHost: "h1"))
        XCTAssertEqual(table.hostCount, 0)
        XCTAssertNil(table.remove(job: "b"))
    }

    func testJobHostsKeepTheNewerVerdict() {
        var table = JobHosts()
        _ = table.add(job: "a", host: "h")
        let older = verdict("h"), newer = verdict("h")
        XCTAssertTrue(table.record([newer]))
        XCTAssertFalse(table.record([older]), "out of order: the newer stays")
        XCTAssertEqual(table.verdict(forHost: "h")?.sequence, newer.sequence)
    }

    /// A client looping over distinct hosts (jobs added and removed, or verdicts of hosts no job needs):
    /// the table ends as empty as it began.
    func testManyDistinctHostsLeaveNothingBehind() {
        var table = JobHosts()
        for n in 0..<20_000 {
            let host = "10.\(n >> 16).\((n >> 8) & 255).\(n & 255)"
            _ = table.add(job: "job\(n)", host: host)
            _ = table.record([verdict(host), verdict("192.0.2.\(n & 255)-\(n)")])
            XCTAssertLessThanOrEqual(table.verdictCount, 1)
            XCTAssertEqual(table.remove(job: "job\(n)"), host)
        }
        XCTAssertEqual(table.hostCount, 0)
        XCTAssertEqual(table.verdictCount, 0)
    }

    // MARK: HostSubscriptions

    /// Runs every step as reachd would take it; returns them.
    private func settle(_ plan: inout HostSubscriptions, refusing: (HostSubscriptions.Step) -> String? = { _ in nil }) -> [HostSubscriptions.Step] {
        var steps: [HostSubscriptions.Step] = []
        while let step = plan.next() {
            steps.append(step)
            _ = plan.finished(step, refusal: refusing(step))
            XCTAssertLessThanOrEqual(plan.hosts(on: step.connection).count, plan.perConnection)
        }
        return steps
    }

    private func connected(perConnection: Int = 8, batch: Int = 3) -> HostSubscriptions {
        var plan = HostSubscriptions(perConnection: perConnection, batch: batch)
        plan.opened(plan.reserve())
        return plan
    }

    func testNewHostsAreSubscribedIncrementallyInBatches() {
        var plan = connected()
        plan.watch(["a", "b", "c", "d"])
        XCTAssertEqual(settle(&plan).map(\.hosts), [["a", "b", "c"], ["d"]])
        plan.watch(["e", "a"])
        let steps = settle(&plan)
        XCTAssertEqual(steps.map(\.hosts), [["e"]], "only the new host; a is subscribed already")
        XCTAssertEqual(steps.map(\.action), [.subscribe])
    }

    func testPastOneConnectionsCapAnotherIsOpenedWithoutResubscribing() {
        var plan = connected()
        plan.watch((0..<8).map { "h\($0)" })
        _ = settle(&plan)
        plan.watch(["h8"])
        let steps = settle(&plan)
        XCTAssertEqual(steps.count, 1)
        XCTAssertEqual(steps.first?.action, .open(replacing: nil))
        XCTAssertEqual(steps.first?.hosts, ["h8"], "the 8 hosts of the full connection are not sent again")
        XCTAssertEqual(plan.connectionCount, 2)
        plan.watch((9..<40).map { "h\($0)" })
        _ = settle(&plan)
        XCTAssertEqual(plan.connectionCount, 5, "ceil(40 / 8)")
    }

    func testAConnectionMostlyOfStaleHostsIsReplacedAndAnIdleOneClosed() {
        var plan = connected()
        let first = (0..<8).map { "a\($0)" }
        plan.watch(first)
        _ = settle(&plan)
        XCTAssertEqual(plan.unwatch(Array(first.prefix(5))), Array(first.prefix(5)))
        plan.watch(["new"])
        let steps = settle(&plan)
        XCTAssertEqual(steps.count, 1)
        XCTAssertEqual(steps.first?.action, .open(replacing: 0))
        XCTAssertEqual(steps.first?.hosts, Array(first.suffix(3)).sorted() + ["new"])
        XCTAssertEqual(plan.connectionCount, 1, "the replaced connection is gone")

        // A connection nobody needs any more is closed (one always stays).
        plan.watch((0..<8).map { "b\($0)" })
        _ = settle(&plan)
        XCTAssertEqual(plan.connectionCount, 2)
        _ = plan.unwatch((0..<8).map { "b\($0)" })
        XCTAssertEqual(settle(&plan).map(\.action), [.close])
        XCTAssertEqual(plan.connectionCount, 1)
    }

    /// A client churning through distinct hosts: connections and known hosts stay bounded by the watched ones.
    func testChurnOverDistinctHostsStaysBounded() {
        var plan = connected(perConnection: 64, batch: 16)
        let live = (0..<100).map { "live\($0)" }
        plan.watch(live)
        _ = settle(&plan)
        for n in 0..<5_000 {
            plan.watch(["churn\(n)"])
            _ = settle(&plan)
            _ = plan.unwatch(["churn\(n)"])
            XCTAssertLessThanOrEqual(plan.connectionCount, 2 * ((101 + 63) / 64) + 1)
        }
        _ = settle(&plan)
        XCTAssertEqual(plan.watchedCount, 100)
        XCTAssertLessThanOrEqual(plan.knownCount, plan.connectionCount * 64)
    }

    func testRefusedHostsWaitForTheRetryAndAResetStartsOver() {
        var plan = connected()
        plan.watch(["a", "b"])
        _ = settle(&plan) { _ in "no verdict yet: the daemon is starting" }
        XCTAssertEqual(plan.refused, ["a": "no verdict yet: the daemon is starting", "b": "no verdict yet: the daemon is starting"])
        XCTAssertNil(plan.next(), "refused hosts are not asked for again at once")
        plan.retryRefused()
        XCTAssertEqual(settle(&plan).map(\.hosts), [["a", "b"]])
        XCTAssertEqual(plan.refused, [:])

        let stale = plan.next()
        XCTAssertNil(stale)
        plan.watch(["c"])
        let before = plan.next()!
        plan.reset()
        _ = plan.finished(before, refusal: "too late")
        XCTAssertEqual(plan.refused, [:], "a step planned before the reset does not count")
        XCTAssertNil(plan.next(), "no connection")
        plan.opened(plan.reserve())
        XCTAssertEqual(Set(settle(&plan).flatMap(\.hosts)), ["a", "b", "c"], "every watched host again")
    }
}
