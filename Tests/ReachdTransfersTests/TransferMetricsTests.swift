import ReachdModel
import ReachdTransferModel
import XCTest
@testable import ReachdTransfers

/// reachd-transfers' metric families in Prometheus's text format, from events fed by hand.
final class TransferMetricsTests: XCTestCase {
    private func lines(_ metrics: TransferMetrics, _ states: [JobState: Int] = [:]) -> [String] {
        String(decoding: metrics.render(jobStates: states), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    func testEveryFamilyStartsAtZeroAndCounts() {
        let metrics = TransferMetrics()
        var text = lines(metrics)
        for line in ["reachd_transfers_jobs{state=\"deferred\"} 0.0", "reachd_transfers_received_bytes_total{route=\"metered\"} 0",
                     "reachd_transfers_sent_bytes_total{route=\"unmetered\"} 0", "reachd_transfers_deferred_seconds_total{reason=\"metered\"} 0",
                     "reachd_transfers_retries_total 0", "reachd_transfers_refresh_checks_total{result=\"not_modified\"} 0",
                     "reachd_transfers_cache_fetches_total{result=\"stale\"} 0", "reachd_transfers_deferred_longest_seconds 0.0"] {
            XCTAssertTrue(text.contains(line), "\(line) not in \(text)")
        }
        metrics.transferred(1000, upload: false, metered: true)
        metrics.transferred(-50, upload: false, metered: true)
        metrics.transferred(300, upload: true, metered: false)
        metrics.retried()
        metrics.refreshChecked(.changed)
        metrics.fetched(.hit)
        metrics.fetched(.hit)
        var job = Job(id: "j", sequence: 1, spec: DownloadSpec(url: "http://a.test/f", output: "/tmp/f"), owner: Owner(uid: 0, gid: 0),
                      created: .now())
        job.state = .deferred
        metrics.jobChanged(job, verdict: nil)
        text = lines(metrics, [.completed: 3, .deferred: 1])
        for line in ["reachd_transfers_jobs{state=\"completed\"} 3.0", "reachd_transfers_jobs{state=\"deferred\"} 1.0",
                     "reachd_transfers_received_bytes_total{route=\"metered\"} 1000", "reachd_transfers_sent_bytes_total{route=\"unmetered\"} 300",
                     "reachd_transfers_retries_total 1", "reachd_transfers_refresh_checks_total{result=\"changed\"} 1",
                     "reachd_transfers_cache_fetches_total{result=\"hit\"} 2"] {
            XCTAssertTrue(text.contains(line), "\(line) not in \(text)")
        }
        job.state = .running
        metrics.jobChanged(job, verdict: nil)
        let waited = lines(metrics).first { $0.hasPrefix("reachd_transfers_deferred_seconds_total{reason=\"unreachable\"} ") }
            .flatMap { Double($0.split(separator: " ")[1]) }
        XCTAssertGreaterThan(waited ?? 0, 0, "the wait ended under the reason it began with")
        XCTAssertFalse(lines(metrics).contains { $0.contains("a.test") }, "no host name as a label")
    }
}
