import Dispatch
import Foundation
import ReachdClient
import ReachdModel
import ReachdProtocol
import Synchronization

/// reachd's internet verdict, followed on a `subscribe` connection read on a thread of its own, where reachd
/// runs: only its interface and metered flag are kept (they carry NetworkManager's and the DHCP lease's word).
final class DaemonFeed: Sendable {
    private let descriptor = Atomic<Int32>(-1)
    /// Held while a word is passed on, so that none is passed once `cancel` returned.
    private let cancelled = Mutex<Bool>(false)

    private init() {}

    /// Connects to reachd's socket (`REACHD_SOCKET`, else the system's, else the user's) and waits up to two
    /// seconds for its first verdict; nil when no reachd answers. `onChange` gets each verdict, then nil
    /// when the connection ends (reachd stopped).
    static func start(onChange: @escaping @Sendable (DaemonMetered?) -> Void) -> DaemonFeed? {
        guard let path = SocketPath.clientPath(
            explicit: nil, uid: getuid(), environment: ProcessInfo.processInfo.environment,
            exists: { FileManager.default.fileExists(atPath: $0) }
        ) else { return nil }
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
        descriptor.store(connection.fileDescriptor, ordering: .sequentiallyConsistent)
        guard !cancelled.withLock({ $0 }),
              let current = try? connection.verdict(for: Request(op: .subscribe), timeout: 2) else { return }
        pass(Self.metered(current.verdict), to: onChange)
        onFirst()
        while let reply = try? connection.nextReply() {
            if case .event(let stamped) = reply { pass(Self.metered(stamped.verdict), to: onChange) }
        }
        pass(nil, to: onChange)
    }

    /// Nothing reaches the engine once the feed is cancelled (also when `start` gave up waiting).
    private func pass(_ word: DaemonMetered?, to onChange: @Sendable (DaemonMetered?) -> Void) {
        cancelled.withLock { cancelled in
            if !cancelled { onChange(word) }
        }
    }

    private static func metered(_ verdict: Verdict) -> DaemonMetered? {
        verdict.interface.map { DaemonMetered(interface: $0, metered: verdict.metered) }
    }

    /// Ends the reader thread: the socket is shut down, so its blocking read returns.
    func cancel() {
        cancelled.withLock { $0 = true }
        let fd = descriptor.load(ordering: .sequentiallyConsistent)
        if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
    }
}
