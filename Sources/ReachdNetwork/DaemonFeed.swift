import Dispatch
import Foundation
import ReachdClient
import ReachdModel
import ReachdProtocol
import Synchronization

/// reachd's internet verdict, followed on a `subscribe` connection read on a thread of its own, where reachd
/// runs: only its interface and metered flag are kept (they carry NetworkManager's and the DHCP lease's word).
final class DaemonFeed: Sendable {
    /// The connection's descriptor while it is open, and whether the feed was cancelled. Held while a word
    /// is passed on (so that none is passed once `cancel` returned) and while the descriptor is shut down.
    private let socket = Mutex(FeedSocket())

    private init() {}

    /// Connects to reachd's socket (`REACHD_SOCKET`, else the system's, else the user's) and waits up to two
    /// seconds for its first verdict; nil when no reachd answers. `onChange` gets each verdict, then nil
    /// when the connection ends (reachd stopped).
    static func start(onChange: @escaping @Sendable (DaemonMetered?) -> Void) -> DaemonFeed? {
        guard let path = SocketPath.clientPath(
            explicit: nil, uid: getuid(), environment: ProcessInfo.processInfo.environment,
            exists: { FileManager.default.fileExists(atPath: $0) }
        ) else { return nil }
        return start(socket: path, onChange: onChange)
    }

    /// The same on the socket at `path`.
    static func start(socket path: String, onChange: @escaping @Sendable (DaemonMetered?) -> Void) -> DaemonFeed? {
        let feed = DaemonFeed()
        let answered = DispatchSemaphore(value: 0)
        let first = Atomic<Bool>(false)
        let thread = Thread { [feed] in
            defer { answered.signal() }
            feed.read(path: path, onFirst: { first.store(true, ordering: .sequentiallyConsistent); answered.signal() }, onChange: onChange)
        }
        thread.name = "reachd-network-daemon"
        thread.start()
        _ = answered.wait(timeout: .now() + 2)
        guard first.load(ordering: .sequentiallyConsistent) else {
            feed.cancel()
            return nil
        }
        return feed
    }

    private func read(path: String, onFirst: () -> Void, onChange: @Sendable (DaemonMetered?) -> Void) {
        guard let connection = try? ReachdConnection(path: path) else { return }
        // The connection closes when it is released: its number is given up before, under the lock.
        withExtendedLifetime(connection) {
            defer { socket.withLock { $0.closing() } }
            guard socket.withLock({ $0.opened(connection.fileDescriptor) }),
                  let current = try? connection.verdict(for: Request(op: .subscribe), timeout: 2) else { return }
            pass(Self.metered(current.verdict), to: onChange)
            onFirst()
            while let reply = try? connection.nextReply() {
                if case .event(let stamped) = reply { pass(Self.metered(stamped.verdict), to: onChange) }
            }
            pass(nil, to: onChange)
        }
    }

    /// Nothing reaches the engine once the feed is cancelled (also when `start` gave up waiting).
    private func pass(_ word: DaemonMetered?, to onChange: @Sendable (DaemonMetered?) -> Void) {
        socket.withLock { socket in
            if !socket.cancelled { onChange(word) }
        }
    }

    private static func metered(_ verdict: Verdict) -> DaemonMetered? {
        verdict.interface.map { DaemonMetered(interface: $0, metered: verdict.metered) }
    }

    /// The descriptor of the connection the feed has open; nil once it closed.
    var openDescriptor: Int32? { socket.withLock { $0.descriptor } }

    /// Ends the reader thread: the socket is shut down, so its blocking read returns.
    func cancel() {
        socket.withLock { socket in
            if let fd = socket.cancel() { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }
}

/// Which descriptor `DaemonFeed.cancel` may shut down: only that of the connection the feed has open now. A
/// number the feed gave up belongs to whatever the process opens next (another connection of the app). Pure.
struct FeedSocket: Equatable {
    /// The open connection's descriptor.
    private(set) var descriptor: Int32?
    private(set) var cancelled = false

    /// A connection opened on `fd`: false when the feed was cancelled already (it is not read).
    mutating func opened(_ fd: Int32) -> Bool {
        guard !cancelled else { return false }
        descriptor = fd
        return true
    }

    /// The connection is about to close: its number is no longer the feed's.
    mutating func closing() {
        descriptor = nil
    }

    /// Cancels the feed: the descriptor to shut down, if a connection is open.
    mutating func cancel() -> Int32? {
        cancelled = true
        return descriptor
    }
}
