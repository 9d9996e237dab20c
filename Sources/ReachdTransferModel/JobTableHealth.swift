import ReachdModel

/// What the queue knows of its job table's writes (a full file system, a read-only one, I/O errors): which jobs'
/// latest changes only memory holds, which forgotten jobs' rows are still to be deleted, since when writes fail
/// and why, and a damaged table set aside at start. The queue goes on in memory meanwhile; `retryNeeded` says
/// when to try again. Pure.
public struct JobTableHealth: Hashable, Sendable {
    /// Jobs whose latest change could not be written, by id.
    public private(set) var unsaved: Set<String> = []
    /// Forgotten jobs whose rows could not be deleted.
    public private(set) var undeleted: Set<String> = []
    /// Why the last write failed, and when writes began to fail; nil while they succeed.
    public private(set) var failure: Failure?
    /// Where a damaged table was moved at start, if one was.
    public let setAside: String?

    /// What a write's outcome changed, for the log.
    public enum Change: Hashable, Sendable {
        case none
        /// The first write that failed after writes succeeded.
        case failing
        /// Every change memory held is written again.
        case recovered
    }

    /// Why the last write failed, and since when writes fail.
    public struct Failure: Hashable, Sendable {
        public var reason: String
        public var since: Timestamp
    }

    public init(setAside: String? = nil) { self.setAside = setAside }

    /// Whether there is anything to write again.
    public var retryNeeded: Bool { !unsaved.isEmpty || !undeleted.isEmpty }

    /// The job's row was written.
    public mutating func saved(_ id: String) -> Change {
        unsaved.remove(id)
        return settle()
    }

    /// The job's row could not be written (`reason`) at `time`.
    public mutating func saveFailed(_ id: String, reason: String, at time: Timestamp) -> Change {
        unsaved.insert(id)
        return fail(reason, at: time)
    }

    /// The jobs' rows were deleted.
    public mutating func deleted(_ ids: some Sequence<String>) -> Change {
        for id in ids {
            undeleted.remove(id)
            unsaved.remove(id)
        }
        return settle()
    }

    /// The jobs' rows could not be deleted (`reason`) at `time`; the jobs are gone from memory all the same.
    public mutating func deleteFailed(_ ids: some Sequence<String>, reason: String, at time: Timestamp) -> Change {
        for id in ids {
            undeleted.insert(id)
            unsaved.remove(id)
        }
        return fail(reason, at: time)
    }

    /// The line `download list` shows, nil while all is well.
    public var notice: String? {
        var lines: [String] = []
        if let setAside { lines.append("the job table was damaged at start and set aside as \(setAside); the queue started empty") }
        if let failure {
            let pending = unsaved.count + undeleted.count
            lines.append("the job table cannot be written since \(failure.since) (\(failure.reason)): "
                + "\(pending) job\(pending == 1 ? "'s" : "s'") latest changes are kept in memory and written once it can be")
        }
        return lines.isEmpty ? nil : lines.joined(separator: "; ")
    }

    private mutating func fail(_ reason: String, at time: Timestamp) -> Change {
        let first = failure == nil
        failure = Failure(reason: reason, since: failure?.since ?? time)
        return first ? .failing : .none
    }

    private mutating func settle() -> Change {
        guard failure != nil, !retryNeeded else { return .none }
        failure = nil
        return .recovered
    }
}
