/// The connections of a listener whose peers cannot be told apart by user (TCP on loopback): at most `capacity`;
/// a newcomer at capacity takes the place of the connection that has waited longest with no request in progress,
/// so idle connections cannot keep a working client out. A pure value; times are monotonic nanoseconds.
public struct EvictingSlots<ID: Hashable & Sendable>: Sendable {
    /// The answer for a newcomer.
    public enum Admission: Equatable, Sendable {
        case admitted
        /// Admitted in the place of this connection, which the listener closes.
        case admittedInPlaceOf(ID)
        /// Every connection has a request in progress.
        case refused
    }

    public let capacity: Int
    /// Connections waiting for a request, since when.
    private var waiting: [ID: UInt64] = [:]
    /// Connections with a request in progress.
    private var busy: Set<ID> = []

    public init(capacity: Int) { self.capacity = max(1, capacity) }

    public var count: Int { waiting.count + busy.count }

    public mutating func admit(_ id: ID, now: UInt64) -> Admission {
        guard count >= capacity else {
            waiting[id] = now
            return .admitted
        }
        guard let oldest = waiting.min(by: { $0.value < $1.value })?.key else { return .refused }
        waiting[oldest] = nil
        waiting[id] = now
        return .admittedInPlaceOf(oldest)
    }

    /// `id` has a request in progress: it is not evicted until it waits again.
    public mutating func startRequest(_ id: ID) {
        guard waiting.removeValue(forKey: id) != nil else { return }
        busy.insert(id)
    }

    /// `id` answered its request and waits for the next one from `now`.
    public mutating func finishRequest(_ id: ID, now: UInt64) {
        guard busy.remove(id) != nil else { return }
        waiting[id] = now
    }

    /// `id` closed (or was evicted).
    public mutating func remove(_ id: ID) {
        waiting[id] = nil
        busy.remove(id)
    }
}
