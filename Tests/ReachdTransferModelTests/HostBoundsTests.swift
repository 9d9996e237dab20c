import ReachdModel
import ReachdTransferModel
import XCTest

/// What the transfer service keeps per host, however many hosts clients name (issue 22): the scheduler's
/// verdicts (`JobHosts`).
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
}
