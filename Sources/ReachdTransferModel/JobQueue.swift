/// Which waiting jobs start next: highest priority first, FIFO within a priority, up to the concurrency limit.
public enum JobQueue {
    /// Where a queued job stands: a higher priority first, then the one added first.
    public struct Place: Sendable {
        public let priority: Priority
        public let sequence: Int64
        public let id: String

        /// The place of `job` while it is queued; nil in any other state.
        public init?(_ job: Job) {
            guard job.state == .queued else { return nil }
            (priority, sequence, id) = (job.priority, job.sequence, job.id)
        }

        func precedes(_ other: Place) -> Bool {
            (priority, -sequence) > (other.priority, -other.sequence)
        }
    }

    /// The ids to start now (in order), given the places of the queued jobs and how many are running. The free
    /// slots are few and the queue may be long, and this runs each time a slot frees: the first ones are picked
    /// in one pass, without sorting the queue.
    public static func toStart(_ places: some Sequence<Place>, running: Int, limit: Int) -> [String] {
        let free = limit - running
        guard free > 0 else { return [] }
        var first: [Place] = []
        for place in places where first.count < free || place.precedes(first[first.count - 1]) {
            if first.count == free { first.removeLast() }
            first.insert(place, at: first.firstIndex { place.precedes($0) } ?? first.count)
        }
        return first.map(\.id)
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
