import ReachdModel
import ReachdTransferModel
import XCTest

/// The job table's failed writes: which changes only memory holds, when to say so, when all is written again.
final class JobTableHealthTests: XCTestCase {
    private let first = Timestamp(microseconds: 1_800_000_000_000_000)
    private let later = Timestamp(microseconds: 1_800_000_060_000_000)

    func testAFailureIsSaidOnceAndRecoveryOnlyWhenEveryChangeIsWritten() {
        var health = JobTableHealth()
        XCTAssertNil(health.notice)
        XCTAssertEqual(health.saved("a"), .none)
        XCTAssertEqual(health.saveFailed("a", reason: "SQLite error 13: database or disk is full", at: first), .failing)
        XCTAssertEqual(health.saveFailed("b", reason: "SQLite error 10: disk I/O error", at: later), .none, "said once")
        XCTAssertEqual(health.failure?.since, first, "failing since the first")
        XCTAssertEqual(health.failure?.reason, "SQLite error 10: disk I/O error", "the latest reason")
        XCTAssertEqual(health.unsaved, ["a", "b"])
        XCTAssertTrue(health.retryNeeded)
        XCTAssertEqual(health.notice, "the job table cannot be written since \(first) (SQLite error 10: disk I/O error): "
            + "2 jobs' latest changes are kept in memory and written once it can be")
        XCTAssertEqual(health.saved("a"), .none, "b is still only in memory")
        XCTAssertEqual(health.saved("b"), .recovered)
        XCTAssertNil(health.failure)
        XCTAssertFalse(health.retryNeeded)
        XCTAssertNil(health.notice)
    }

    func testForgottenJobsRowsAreDeletedLaterAndTheirUnsavedChangesDropped() {
        var health = JobTableHealth()
        _ = health.saveFailed("a", reason: "EIO", at: first)
        XCTAssertEqual(health.deleteFailed(["a", "c"], reason: "EIO", at: later), .none)
        XCTAssertEqual(health.unsaved, [], "a forgotten job's change is not written")
        XCTAssertEqual(health.undeleted, ["a", "c"])
        XCTAssertTrue(health.notice?.contains("2 jobs' latest changes") ?? false, health.notice ?? "")
        XCTAssertEqual(health.deleted(["a"]), .none)
        XCTAssertEqual(health.deleted(["c"]), .recovered)
    }

    func testATableSetAsideIsAlwaysSaid() {
        var health = JobTableHealth(setAside: "/var/lib/reachd-transfers/jobs.sqlite.damaged-20261129T050000Z")
        XCTAssertEqual(health.notice, "the job table was damaged at start and set aside as "
            + "/var/lib/reachd-transfers/jobs.sqlite.damaged-20261129T050000Z; the queue started empty")
        _ = health.saveFailed("a", reason: "EIO", at: first)
        XCTAssertTrue(health.notice?.contains("; the job table cannot be written since") ?? false, health.notice ?? "")
        XCTAssertTrue(health.notice?.contains("1 job's latest changes") ?? false, health.notice ?? "")
    }
}
