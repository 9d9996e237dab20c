/// Which waiting jobs start next: highest priority first, FIFO within a priority, up to the concurrency limit.
public enum JobQueue {
    /// The ids to start now, given every job and how many are running.
    public static func toStart(_ jobs: some Sequence<Job>, running: Int, limit: Int) -> [String] {
        let free = limit - running
        guard free > 0 else { return [] }
        // Sorted as small keys, not as jobs: a long queue is sorted again each time a slot frees.
        return jobs.lazy.filter { $0.state == .queued }
            .map { (priority: $0.priority, sequence: $0.sequence, id: $0.id) }
            .sorted { ($0.priority, -$0.sequence) > ($1.priority, -$1.sequence) }
            .prefix(free)
            .map(\.id)
    }
}

/// When to write a running job's progress to the store: at most about once a second or every few MiB,
/// so a crash loses little bookkeeping (the partial file's size is the truth on restart).
public struct ProgressCheckpoint: Hashable, Sendable {
    public var intervalSeconds: Double
    public var intervalBytes: Int64

    public init(intervalSeconds: Double = 1, intervalBytes: Int64 = 8 * 1024 * 1024) {
        self.intervalSeconds = intervalSeconds
        self.intervalBytes = intervalBytes
    }

    public func isDue(bytesSince: Int64, secondsSince: Double) -> Bool {
        bytesSince >= intervalBytes || (bytesSince > 0 && secondsSince >= intervalSeconds)
    }
}
