import Foundation
import Logging
import ReachdConfig
import ReachdModel
import ReachdMonitor
import Synchronization

/// The I/O around `PathJudge` for one monitor: `NetworkView` (the daemons' netlink watcher, NetworkManager's
/// and networkd's metered words) in this process, reachd's metered word where it runs, `/etc/resolv.conf`.
/// Hands each new path to `deliver`, in order, never the same path twice.
final class PathEngine: Sendable {
    private struct State {
        var snapshot: NetworkSnapshot?
        var daemon: DaemonMetered?
        var last: NWPath?
        /// The watcher could not start: the unsatisfied path is all there is.
        var failed = false
        var stopped = false
    }

    private let configuration: Configuration
    private let judge: PathJudge
    private let deliver: @Sendable (NWPath) -> Void
    private let state = Mutex(State())
    private let view = Mutex<NetworkView?>(nil)
    private let feed = Mutex<DaemonFeed?>(nil)

    init(configuration: Configuration, judge: PathJudge, deliver: @escaping @Sendable (NWPath) -> Void) {
        self.configuration = configuration
        self.judge = judge
        self.deliver = deliver
    }

    /// Starts watching; the first path is delivered before this returns. Without netlink (an error), the
    /// path stays unsatisfied.
    func start() {
        let feed = DaemonFeed.start { [weak self] word in self?.update { $0.daemon = word } }
        self.feed.withLock { $0 = feed }
        if feed == nil {
            // reachd answered too late: a word it passed before giving up is not followed, so it does not count.
            update { $0.daemon = nil }
        }
        var logger = Logger(label: "reachd-network")
        logger.logLevel = .error
        do {
            let view = try NetworkView(
                configuration: configuration, watcher: .init(), networkManager: .system, logger: logger,
                snapshots: { [weak self] snapshot in self?.update { $0.snapshot = snapshot } }
            )
            self.view.withLock { $0 = view }
            try view.start()
        } catch {
            logger.error("cannot watch the network: \(error)")
            update { $0.failed = true }
        }
    }

    /// Stops the watcher and the daemon's connection; nothing is delivered after this returns.
    func stop() {
        feed.withLock { $0?.cancel() }
        state.withLock { $0.stopped = true }
        guard let view = view.withLock({ $0 }) else { return }
        view.stopWatching()
        Task.detached { await view.stop() }
    }

    /// Applies `change` and delivers the path if it changed (under the lock, so that paths keep their order).
    private func update(_ change: (inout State) -> Void) {
        state.withLock { state in
            change(&state)
            guard !state.stopped, state.snapshot != nil || state.failed else { return }
            let path = state.snapshot.map { judge.path(for: $0, nameServer: Self.hasNameServer(), daemon: state.daemon) } ?? .unknown
            guard path != state.last else { return }
            state.last = path
            deliver(path)
        }
    }

    /// `/etc/resolv.conf` names a name server.
    private static func hasNameServer() -> Bool {
        guard let text = try? String(contentsOfFile: "/etc/resolv.conf", encoding: .utf8) else { return false }
        return text.split(separator: "\n").contains { $0.split(whereSeparator: \.isWhitespace).first == "nameserver" }
    }
}
