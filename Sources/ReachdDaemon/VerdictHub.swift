import ReachdModel
import Synchronization

/// Owns the current network snapshot and the published verdict; tells observers about each change once.
public final class VerdictHub: Sendable {
    /// Identifies an observer for `removeObserver`.
    public struct ObserverID: Hashable, Sendable {
        fileprivate let value: Int
    }

    private struct State {
        var engine: InternetVerdict
        var snapshot = NetworkSnapshot()
        var tracker = VerdictTracker()
        var observers: [Int: @Sendable (StampedVerdict) -> Void] = [:]
        var nextObserver = 0
    }

    private let state: Mutex<State>

    public init(engine: InternetVerdict) {
        state = Mutex(State(engine: engine))
    }

    /// The verdict as last published; nil before the first snapshot.
    public var current: StampedVerdict? { state.withLock { $0.tracker.current } }

    /// Computes the verdict for `snapshot` and, if it changed, notifies every observer.
    /// Calls must come from one serial context (the watcher's queue) so that events keep their order.
    @discardableResult
    public func update(snapshot: NetworkSnapshot, at time: Timestamp = .now()) -> StampedVerdict? {
        let (published, observers) = state.withLock { state -> (StampedVerdict?, [@Sendable (StampedVerdict) -> Void]) in
            state.snapshot = snapshot
            let verdict = state.engine.verdict(for: snapshot)
            guard let stamped = state.tracker.record(verdict, at: time) else { return (nil, []) }
            return (stamped, Array(state.observers.values))
        }
        if let published {
            for observer in observers { observer(published) }
        }
        return published
    }

    /// Calls `observer` with every published change (not the current verdict).
    public func addObserver(_ observer: @escaping @Sendable (StampedVerdict) -> Void) -> ObserverID {
        state.withLock { state in
            state.nextObserver += 1
            state.observers[state.nextObserver] = observer
            return ObserverID(value: state.nextObserver)
        }
    }

    public func removeObserver(_ id: ObserverID) {
        _ = state.withLock { $0.observers.removeValue(forKey: id.value) }
    }
}
