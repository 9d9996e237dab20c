import ReachdModel
import Synchronization

/// Owns the current network snapshot, the connectivity check's result and the published internet verdict;
/// tells observers about each change once, in order. Where the network announced a captive-portal API and it
/// answered, its word (`portal` while captive, else `full`) is the connectivity, before the check's.
///
/// A change of the captive portal's counters alone (`seconds-remaining`, `bytes-remaining`) is not a change:
/// it takes no sequence number and `update(snapshot:)` returns nil for it; `current` carries the new counters,
/// and only observers added with `refreshes: true` (D-Bus) are told.
public final class VerdictHub: Sendable {
    /// Identifies an observer for `removeObserver`.
    public struct ObserverID: Hashable, Sendable {
        fileprivate let value: Int
    }

    private struct Observer {
        let id: Int
        var refreshes: Bool
        var first: Bool
        var call: @Sendable (StampedVerdict) -> Void
    }

    private struct State {
        var engine: InternetVerdict
        var checking: Bool
        var snapshot = NetworkSnapshot()
        var connectivity = Connectivity.unknown
        var tracker = VerdictTracker()
        /// The order they are told: those added with `first` (the metrics, then the subscribers' fan-out), then
        /// the others (the D-Bus service, the followers, systemd's status line), each group in the order added.
        var observers: [Observer] = []
        var nextObserver = 0

        /// The verdict for the current snapshot with the check's word on it.
        mutating func record(at time: Timestamp) -> VerdictTracker.Outcome {
            var verdict = engine.verdict(for: snapshot)
            if verdict.reachable, let word = verdict.captivePortal?.connectivity {
                verdict.connectivity = word
            } else if checking {
                verdict.connectivity = verdict.reachable ? connectivity : .none
            }
            return tracker.recordOutcome(verdict, at: time)
        }
    }

    private let state: Mutex<State>

    /// `checking`: a connectivity check is configured (else `connectivity` stays `unknown`).
    public init(engine: InternetVerdict, checking: Bool = false) {
        state = Mutex(State(engine: engine, checking: checking))
    }

    /// The verdict as last published (with the portal's latest counters); nil before the first snapshot.
    public var current: StampedVerdict? { state.withLock { $0.tracker.current } }

    /// The snapshot the current verdict was judged from.
    public var snapshot: NetworkSnapshot { state.withLock { $0.snapshot } }

    /// Computes the verdict for `snapshot` and, if it changed, notifies every observer; returns the change
    /// (nil when nothing changed but, at most, the portal's counters).
    @discardableResult
    public func update(snapshot: NetworkSnapshot, at time: Timestamp = .now()) -> StampedVerdict? {
        state.withLock { state in
            state.snapshot = snapshot
            return publish(state.record(at: time), &state)
        }
    }

    /// Takes a connectivity check's result and, if the verdict changed, notifies every observer.
    @discardableResult
    public func update(connectivity: Connectivity, at time: Timestamp = .now()) -> StampedVerdict? {
        state.withLock { state in
            state.connectivity = connectivity
            return publish(state.record(at: time), &state)
        }
    }

    /// Observers run under the lock, so that two changes reach them in the order they were made;
    /// they only hand the verdict on (to event loops, to the connectivity check).
    private func publish(_ outcome: VerdictTracker.Outcome, _ state: inout State) -> StampedVerdict? {
        switch outcome {
        case .unchanged:
            return nil
        case .refreshed(let stamped):
            for observer in state.observers where observer.refreshes { observer.call(stamped) }
            return nil
        case .changed(let stamped):
            for observer in state.observers { observer.call(stamped) }
            return stamped
        }
    }

    /// Calls `observer` with every published change. `startingWithCurrent`: first with the current verdict (if
    /// any), taken and registered under one lock, so that no change comes before it or goes missing.
    /// `refreshes`: also with every refresh of the portal's counters (same sequence). `first`: called before the
    /// observers added without it (the metrics, a few gauges, and the subscribers' fan-out, which D-Bus, the
    /// followers and systemd's status line should not hold up); otherwise observers are called in the order added.
    public func addObserver(
        startingWithCurrent: Bool = false, refreshes: Bool = false, first: Bool = false,
        _ observer: @escaping @Sendable (StampedVerdict) -> Void
    ) -> ObserverID {
        state.withLock { state in
            state.nextObserver += 1
            let added = Observer(id: state.nextObserver, refreshes: refreshes, first: first, call: observer)
            let place = first ? state.observers.firstIndex { !$0.first } : nil
            state.observers.insert(added, at: place ?? state.observers.endIndex)
            if startingWithCurrent, let current = state.tracker.current { observer(current) }
            return ObserverID(value: state.nextObserver)
        }
    }

    public func removeObserver(_ id: ObserverID) {
        state.withLock { $0.observers.removeAll { $0.id == id.value } }
    }
}
