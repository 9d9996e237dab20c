import Dispatch
import Foundation
import ReachdConfig
import Synchronization

/// An observer of the network path, source-compatible with Apple's Network framework.
///
/// Each started monitor watches the kernel in this process (the netlink engine reachd itself runs) and,
/// where reachd runs, takes reachd's metered word for the path's interface. `pathUpdateHandler` runs on the
/// queue given to `start(queue:)`, once with the first path and then once per change, in order; iterating
/// the monitor (`for await path in monitor`) yields the current path and then each change, with or without
/// `start(queue:)`.
public final class NWPathMonitor: Sendable {
    private struct State {
        var handler: (@Sendable (NWPath) -> Void)?
        var queue: DispatchQueue?
        /// The engine's latest path; nil until it gave its first (a new consumer gets that one first).
        var path: NWPath?
        var engine: PathEngine?
        var streams: [UUID: AsyncStream<NWPath>.Continuation] = [:]
        var cancelled = false
    }

    private let configuration: Configuration
    private let judge: PathJudge
    /// Starts a new engine's I/O (outside the lock); tests hand it snapshots themselves instead.
    private let startEngine: @Sendable (PathEngine) -> Void
    private let state = Mutex(State())

    /// A monitor of every interface type.
    public convenience init() {
        self.init(required: nil, prohibited: [])
    }

    /// A monitor of the best path over interfaces of `requiredInterfaceType` only.
    public convenience init(requiredInterfaceType: NWInterface.InterfaceType) {
        self.init(required: requiredInterfaceType, prohibited: [])
    }

    /// A monitor of the best path over interfaces of any type but `prohibitedInterfaceTypes`.
    public convenience init(prohibitedInterfaceTypes: [NWInterface.InterfaceType]) {
        self.init(required: nil, prohibited: prohibitedInterfaceTypes)
    }

    /// Reads the configuration (`REACHD_CONFIG`, else /etc/reachd/reachd.toml, else the defaults).
    init(required: NWInterface.InterfaceType?, prohibited: [NWInterface.InterfaceType],
         startEngine: @escaping @Sendable (PathEngine) -> Void = { $0.start() }) {
        configuration = MonitorConfiguration.load()
        judge = PathJudge(classifier: configuration.classifier, required: required, prohibited: prohibited)
        self.startEngine = startEngine
    }

    /// The last reference can go on an engine thread while it hands a path on (`receive` holds one then):
    /// the engine stops its threads from another thread then.
    deinit {
        state.withLock { $0.engine }?.stop()
    }

    /// The latest path; unsatisfied, with no interfaces, before the monitor started.
    public var currentPath: NWPath { state.withLock { $0.path } ?? .unknown }

    /// Called on `queue` with each new path.
    @preconcurrency
    public var pathUpdateHandler: (@Sendable (_ newPath: NWPath) -> Void)? {
        get { state.withLock { $0.handler } }
        set { state.withLock { $0.handler = newValue } }
    }

    /// The queue given to `start(queue:)`; nil before.
    public var queue: DispatchQueue? { state.withLock { $0.queue } }

    /// Starts watching and calls `pathUpdateHandler` on `queue` with the current path, then with each change.
    /// A second call, or a call after `cancel()`, does nothing. Where reachd's socket exists, this waits up to
    /// two seconds for its first answer.
    public func start(queue: DispatchQueue) {
        let engine = state.withLock { state -> PathEngine? in
            guard !state.cancelled, state.queue == nil else { return nil }
            state.queue = queue
            guard state.engine != nil else { return makeEngine(&state) }
            // Iteration started the engine: its latest path, if it gave one yet (else `receive` passes the
            // first), queued under the lock so that no later path overtakes it.
            if let path = state.path, let handler = state.handler { queue.async { handler(path) } }
            return nil
        }
        if let engine { startEngine(engine) }
    }

    /// Stops watching for good: no handler call is made and every iteration ends.
    public func cancel() {
        let (engine, streams) = state.withLock { state in
            state.cancelled = true
            defer { state.streams = [:] }
            return (state.engine, Array(state.streams.values))
        }
        engine?.stop()
        for stream in streams { stream.finish() }
    }

    /// A new engine, recorded in `state`; the caller starts it outside the lock.
    private func makeEngine(_ state: inout State) -> PathEngine {
        let engine = PathEngine(configuration: configuration, judge: judge) { [weak self] path in self?.receive(path) }
        state.engine = engine
        return engine
    }

    /// A new path from the engine: to the handler on the queue and to every iteration, in order.
    private func receive(_ path: NWPath) {
        state.withLock { state in
            guard !state.cancelled else { return }
            state.path = path
            if let queue = state.queue, let handler = state.handler { queue.async { handler(path) } }
            for stream in state.streams.values { stream.yield(path) }
        }
    }

    /// A stream of the current path (once known) and every change; starts the engine if nothing did.
    fileprivate func paths() -> AsyncStream<NWPath> {
        let (stream, continuation) = AsyncStream.makeStream(of: NWPath.self, bufferingPolicy: .bufferingNewest(64))
        let id = UUID()
        let engine = state.withLock { state -> PathEngine? in
            guard !state.cancelled else {
                continuation.finish()
                return nil
            }
            state.streams[id] = continuation
            if state.engine != nil {
                // The latest path, once the engine gave one (else `receive` yields the first).
                if let path = state.path { continuation.yield(path) }
                return nil
            }
            return makeEngine(&state)
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.streams.removeValue(forKey: id) }
        }
        if let engine { startEngine(engine) }
        return stream
    }
}

extension NWPathMonitor: CustomDebugStringConvertible {
    public var debugDescription: String {
        let types = judge.required.map { "required \($0)" } ?? (judge.prohibited.isEmpty ? "" : "prohibited \(judge.prohibited)")
        return "NWPathMonitor" + (types.isEmpty ? "" : "(\(types))") + ": \(currentPath.debugDescription)"
    }
}

extension NWPathMonitor: AsyncSequence {
    public typealias Element = NWPath
    public typealias AsyncIterator = Iterator

    /// Yields the current path, then each change, until the monitor is cancelled.
    public struct Iterator: AsyncIteratorProtocol {
        /// Keeps the monitor (and its engine) alive while iterating, as `for await path in NWPathMonitor()` needs.
        private let monitor: NWPathMonitor
        private var paths: AsyncStream<NWPath>.Iterator

        fileprivate init(monitor: NWPathMonitor) {
            self.monitor = monitor
            paths = monitor.paths().makeAsyncIterator()
        }

        public mutating func next() async -> NWPath? {
            await paths.next()
        }
    }

    public func makeAsyncIterator() -> Iterator { Iterator(monitor: self) }
}
