import GRDB
import ReachdModel
import ReachdTransferModel

/// The job table's writes, and what the queue does while they fail (a full or read-only file system, I/O errors):
/// it goes on in memory, says so (the log, `download list`), and writes what memory holds every
/// `tableRetrySeconds` until it can. A job is confirmed to its owner only once its row is written.
extension TransferScheduler {
    /// How often writes are tried again while the table cannot be written.
    static let tableRetrySeconds = 5.0

    /// Writes the job's row.
    func persist(_ job: Job) {
        do {
            try store.save(job)
            note(health.saved(job.id))
        } catch {
            note(health.saveFailed(job.id, reason: Self.reason(error), at: .now()))
        }
    }

    /// Deletes the jobs' rows (the jobs are gone from memory either way).
    func deleteRows(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        do {
            try store.delete(ids)
            note(health.deleted(ids))
        } catch {
            note(health.deleteFailed(ids, reason: Self.reason(error), at: .now()))
        }
    }

    /// What `download list` says of the table, nil while all is well.
    var tableNotice: String? { health.notice }

    /// Writes again every change memory holds (`tableRetrySeconds` after the last try, and at shutdown).
    func retryTable() {
        tableRetry = nil
        deleteRows(Array(health.undeleted))
        for id in health.unsaved {
            if let job = machines[id]?.job {
                persist(job)
            } else {
                note(health.deleted([id]))
            }
        }
    }

    /// A store error in a few words: SQLite's own (`database or disk is full`), without the statement.
    nonisolated static func reason(_ error: any Error) -> String {
        guard let error = error as? DatabaseError else { return "\(error)" }
        return "SQLite error \(error.resultCode.rawValue): \(error.message ?? "\(error.resultCode)")"
    }

    private func note(_ change: JobTableHealth.Change) {
        switch change {
        case .failing:
            logger.error("the job table cannot be written (\(health.failure?.reason ?? "")): the queue goes on in memory and writes its changes once it can")
        case .recovered:
            logger.notice("the job table is written again: every change kept in memory is saved")
        case .none: break
        }
        guard health.retryNeeded, tableRetry == nil, !stopping else { return }
        tableRetry = Task {
            try? await Task.sleep(for: .seconds(Self.tableRetrySeconds))
            guard !Task.isCancelled else { return }
            self.retryTable()
        }
    }
}
