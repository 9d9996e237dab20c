import Foundation
@_exported import ReachdModel
import ReachdClient
import ReachdConfig
import ReachdProtocol
import Synchronization

extension Notification.Name {
    /// Posted by `ReachabilityMonitor` on each change of the verdict; `object` is the monitor,
    /// `userInfo["verdict"]` the `StampedVerdict`.
    public static let reachabilityChanged = Notification.Name("ReachabilityChangedNotification")
}

/// Tells a Swift program whether the internet is reachable and over what kind of link, and when that changes.
///
/// It works in-process on netlink (no daemon needed) or as a client of a running reachd. Changes arrive as
/// an `AsyncStream`, through `whenReachable`/`whenUnreachable`, and as `.reachabilityChanged` posts on the
/// notification center given at creation. Closures and posts run on the monitor's internal queue or thread.
public final class ReachabilityMonitor: Sendable {
    /// Where the verdicts come from.
    public enum Source: Sendable {
        /// Watch the kernel in this process; `configuration` holds interface rules.
        case netlink(configuration: Configuration = Configuration(), sysfsRoot: String = "/sys")
        /// Subscribe to reachd at `socketPath` (nil: the same default as `reachctl`).
        case daemon(socketPath: String? = nil)
    }

    /// What to judge: the internet (the default route), or the route to one host.
    public enum Target: Sendable, Equatable {
        case internet
        /// A host name or an IP literal (Apple's `SCNetworkReachabilityCreateWithName`).
        case host(String)
    }

    /// The three answers of the Reachability.swift API, from the seeds' decision tree.
    public enum Connection: String, Sendable {
        case unavailable
        case wifi
        case cellular

        public init(_ status: ClassicStatus) {
            switch status {
            case .notReachable: self = .unavailable
            case .reachableViaWiFi: self = .wifi
            case .reachableViaWWAN: self = .cellular
            }
        }
    }

    /// Errors from `startNotifier`.
    public enum MonitorError: Error, CustomStringConvertible, Sendable {
        case noSocketPath
        case alreadyStarted
        case daemon(String)
        case netlink(String)

        public var description: String {
            switch self {
            case .noSocketPath: "no reachd socket: pass a path, or set REACHD_SOCKET or XDG_RUNTIME_DIR"
            case .alreadyStarted: "the notifier is already running"
            case .daemon(let detail): detail
            case .netlink(let detail): "netlink: \(detail)"
            }
        }
    }

    public typealias Handler = @Sendable (StampedVerdict) -> Void

    private struct State: ~Copyable {
        var tracker = VerdictTracker()
        var whenReachable: Handler?
        var whenUnreachable: Handler?
        var streams: [UUID: AsyncStream<StampedVerdict>.Continuation] = [:]
        var inProcess: InProcessSource?
        var connection: SubscribeReader?
        var running = false
    }

    private let target: Target
    private let source: Source
    private let notificationCenter: NotificationCenter
    private let state = Mutex(State())

    public init(target: Target = .internet, source: Source = .netlink(), notificationCenter: NotificationCenter = .default) {
        self.target = target
        self.source = source
        self.notificationCenter = notificationCenter
    }

    /// A monitor for the route to `host`, like `SCNetworkReachabilityCreateWithName`.
    public convenience init(host: String, source: Source = .netlink(), notificationCenter: NotificationCenter = .default) {
        self.init(target: .host(host), source: source, notificationCenter: notificationCenter)
    }

    deinit { stopNotifier() }

    /// The latest verdict; nil before `startNotifier`.
    public var verdict: StampedVerdict? { state.withLock { $0.tracker.current } }

    /// The Reachability.swift answer for the latest verdict.
    public var connection: Connection { Connection(verdict?.verdict.classicStatus ?? .notReachable) }

    /// Called with each verdict that is reachable (the first one included).
    public var whenReachable: Handler? {
        get { state.withLock { $0.whenReachable } }
        set { state.withLock { $0.whenReachable = newValue } }
    }

    /// Called with each verdict that is not reachable (the first one included).
    public var whenUnreachable: Handler? {
        get { state.withLock { $0.whenUnreachable } }
        set { state.withLock { $0.whenUnreachable = newValue } }
    }

    /// The current verdict (once known), then every change, until the stream is dropped or the notifier stops.
    public var updates: AsyncStream<StampedVerdict> {
        let (stream, continuation) = AsyncStream.makeStream(of: StampedVerdict.self, bufferingPolicy: .bufferingNewest(64))
        let id = UUID()
        let current = state.withLock { state -> StampedVerdict? in
            state.streams[id] = continuation
            return state.tracker.current
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.streams.removeValue(forKey: id) }
        }
        if let current { continuation.yield(current) }
        return stream
    }

    /// Starts watching; the first verdict is delivered before this returns.
    public func startNotifier() throws {
        try state.withLock { state in
            guard !state.running else { throw MonitorError.alreadyStarted }
            state.running = true
        }
        do {
            switch source {
            case .netlink(let configuration, let sysfsRoot):
                try startNetlink(configuration: configuration, sysfsRoot: sysfsRoot)
            case .daemon(let path):
                try startDaemon(path: path)
            }
        } catch {
            state.withLock { $0.running = false }
            throw error
        }
    }

    /// Stops watching and finishes every `updates` stream.
    public func stopNotifier() {
        let (inProcess, connection, streams) = state.withLock { state in
            defer {
                state.inProcess = nil
                state.connection = nil
                state.streams = [:]
                state.running = false
            }
            return (state.inProcess, state.connection, Array(state.streams.values))
        }
        inProcess?.stop()
        connection?.stop()
        for stream in streams { stream.finish() }
    }

    private func startNetlink(configuration: Configuration, sysfsRoot: String) throws {
        let source: InProcessSource
        do {
            source = try InProcessSource(target: target, configuration: configuration, sysfsRoot: sysfsRoot) { [weak self] verdict in
                self?.deliver(verdict)
            }
        } catch {
            throw MonitorError.netlink("\(error)")
        }
        state.withLock { $0.inProcess = source }
    }

    private func startDaemon(path explicit: String?) throws {
        let environment = ProcessInfo.processInfo.environment
        guard let path = SocketPath.clientPath(
            explicit: explicit, uid: getuid(), environment: environment,
            exists: { FileManager.default.fileExists(atPath: $0) }
        ) else { throw MonitorError.noSocketPath }
        let hosts: [String] = switch target {
        case .internet: []
        case .host(let host): [host]
        }
        // reachd's end ends the events (the last verdict stands), as a refusal does.
        let handlers = SubscribeReader.Handlers(
            verdicts: { [weak self] verdicts in
                for stamped in verdicts { self?.deliver(stamped.verdict, stamped: stamped) }
            },
            unreachable: { _ in }
        )
        let subscription: SubscribeReader
        do {
            subscription = try SubscribeReader.open(path: path, hosts: hosts, retry: .never, timeout: 30, handlers: handlers)
        } catch {
            throw MonitorError.daemon("\(error)")
        }
        // A handler of the first verdict may have stopped the monitor already.
        let running = state.withLock { state in
            if state.running { state.connection = subscription }
            return state.running
        }
        if !running { subscription.stop() }
    }

    /// Records a verdict and, on change, tells every listener. `stamped` keeps the daemon's numbering.
    private func deliver(_ verdict: Verdict, stamped: StampedVerdict? = nil) {
        let (published, handler, streams): (StampedVerdict?, Handler?, [AsyncStream<StampedVerdict>.Continuation]) = state.withLock { state in
            guard let published = state.tracker.record(verdict, at: stamped?.timestamp ?? .now()) else { return (nil, nil, []) }
            let result = stamped ?? published
            return (result, result.verdict.reachable ? state.whenReachable : state.whenUnreachable, Array(state.streams.values))
        }
        guard let published else { return }
        handler?(published)
        for stream in streams { stream.yield(published) }
        notificationCenter.post(name: .reachabilityChanged, object: self, userInfo: ["verdict": published])
    }
}
