import Dispatch
import Foundation
import Logging
import ReachdConfig
import ReachdModel
import ReachdMonitor
import ReachdSystem
import Synchronization

/// The I/O around `PathJudge` for one monitor: `NetworkView` (the daemons' netlink watcher, NetworkManager's
/// and networkd's metered words) in this process, reachd's metered word where it runs, the resolver's
/// configuration (followed with inotify). Hands each new path to `deliver`, in order, never the same path
/// twice, and never while holding its lock: `deliver` may stop the engine (the monitor's last reference can
/// go there).
final class PathEngine: Sendable {
    private struct State {
        var snapshot: NetworkSnapshot?
        var daemon: DaemonMetered?
        /// The resolver's configuration names a name server; nil while it is not followed (then it is read
        /// at each judgement).
        var nameServer: Bool?
        var last: NWPath?
        /// The watcher could not start: the unsatisfied path is all there is.
        var failed = false
        var stopped = false
        /// Paths judged and not handed on yet, oldest first.
        var pending: [NWPath] = []
        /// The thread handing `pending` on, while one is: only one at a time, so that paths keep their order.
        var deliverer: pthread_t?
        var parts = Parts()
    }

    /// What runs while the engine does.
    private struct Parts: Sendable {
        var feed: DaemonFeed?
        var resolver: FollowedFile<Bool>?
        var view: NetworkView?

        /// Ends them: joins their threads, so never on one of them.
        func stop() {
            feed?.cancel()
            resolver?.stop()
            guard let view else { return }
            view.stopWatching()
            Task.detached { await view.stop() }
        }
    }

    private let configuration: Configuration
    private let judge: PathJudge
    private let resolverConfiguration: String
    private let deliver: @Sendable (NWPath) -> Void
    private let state = Mutex(State())

    /// `resolverConfiguration`: the resolver's configuration file (a temporary one in tests).
    init(configuration: Configuration, judge: PathJudge, resolverConfiguration: String = ResolverConfiguration.systemPath,
         deliver: @escaping @Sendable (NWPath) -> Void) {
        self.configuration = configuration
        self.judge = judge
        self.resolverConfiguration = resolverConfiguration
        self.deliver = deliver
    }

    /// Starts watching; the first path is handed on before this returns unless another thread is handing one
    /// on (then that thread hands it on next). Without netlink (an error), the path stays unsatisfied.
    func start() {
        let logger = Self.logger
        followResolverConfiguration()
        let feed = DaemonFeed.start { [weak self] word in self?.update { $0.daemon = word } }
        keep { $0.feed = feed }
        if feed == nil {
            // reachd answered too late: a word it passed before giving up is not followed, so it does not count.
            update { $0.daemon = nil }
        }
        do {
            let view = try NetworkView(
                configuration: configuration, watcher: .init(), networkManager: .system, logger: logger,
                snapshots: { [weak self] snapshot in self?.received(snapshot: snapshot) }
            )
            guard keep({ $0.view = view }) else { return }
            try view.start()
            // Stopped while it started: `stop` may have stopped it before it ran.
            if state.withLock({ $0.stopped }) { view.stopWatching() }
        } catch {
            logger.error("cannot watch the network: \(error)")
            update { $0.failed = true }
        }
    }

    /// Follows the resolver's configuration file; where inotify cannot be used, it is read at each judgement.
    func followResolverConfiguration() {
        do {
            let file = try FollowedFile(path: resolverConfiguration, read: ResolverConfiguration.namesNameServer(at:)) { [weak self] nameServer in
                self?.update { $0.nameServer = nameServer }
            }
            guard keep({ $0.resolver = file }) else { return }
            try file.start()
            if state.withLock({ $0.stopped }) { file.stop() }
        } catch {
            Self.logger.error("cannot follow \(resolverConfiguration): \(error); it is read at each network change")
            state.withLock { state in
                state.nameServer = nil
                state.parts.resolver = nil
            }
        }
    }

    /// Judges a new snapshot of the network.
    func received(snapshot: NetworkSnapshot) {
        update { $0.snapshot = snapshot }
    }

    /// Stops the watcher, the daemon's connection and the resolver's file: no path is handed on once this
    /// returns, but for one being handed on already. Called while a path is handed on (by `deliver`, on one
    /// of the engine's threads), the threads are stopped from another thread, since none can join itself.
    func stop() {
        let (parts, onDeliveringThread) = state.withLock { state in
            state.stopped = true
            state.pending = []
            defer { state.parts = Parts() }
            return (state.parts, state.deliverer.map { pthread_equal($0, pthread_self()) != 0 } ?? false)
        }
        if onDeliveringThread {
            DispatchQueue.global().async { parts.stop() }
        } else {
            parts.stop()
        }
    }

    /// Errors only: a library does not chatter on an app's standard error.
    private static var logger: Logger {
        var logger = Logger(label: "reachd-network")
        logger.logLevel = .error
        return logger
    }

    /// Records a running part; false (and the part is stopped) when the engine stopped meanwhile.
    @discardableResult
    private func keep(_ record: (inout Parts) -> Void) -> Bool {
        let stale = state.withLock { state -> Parts? in
            record(&state.parts)
            guard state.stopped else { return nil }
            defer { state.parts = Parts() }
            return state.parts
        }
        stale?.stop()
        return stale == nil
    }

    /// Applies `change` and, if the path changed, hands it on: this thread hands on every pending path unless
    /// another one already does (outside the lock, in order).
    private func update(_ change: (inout State) -> Void) {
        let delivers = state.withLock { state -> Bool in
            change(&state)
            guard !state.stopped, state.snapshot != nil || state.failed else { return false }
            let nameServer = state.nameServer ?? ResolverConfiguration.namesNameServer(at: resolverConfiguration)
            let path = state.snapshot.map { judge.path(for: $0, nameServer: nameServer, daemon: state.daemon) } ?? .unknown
            guard path != state.last else { return false }
            state.last = path
            state.pending.append(path)
            guard state.deliverer == nil else { return false }
            state.deliverer = pthread_self()
            return true
        }
        guard delivers else { return }
        while let path = nextPending() { deliver(path) }
    }

    /// The oldest pending path; nil (and this thread no longer hands paths on) when none is left or the
    /// engine stopped.
    private func nextPending() -> NWPath? {
        state.withLock { state in
            guard !state.stopped, !state.pending.isEmpty else {
                state.deliverer = nil
                return nil
            }
            return state.pending.removeFirst()
        }
    }
}
