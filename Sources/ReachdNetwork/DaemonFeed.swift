import Foundation
import ReachdClient
import ReachdModel
import ReachdProtocol

/// reachd's internet verdict, followed on its `subscribe` stream (`SubscribeReader`, on a thread of its own)
/// where reachd runs: only its interface and metered flag are kept (they carry NetworkManager's and the DHCP
/// lease's word).
final class DaemonFeed: Sendable {
    private let reader: SubscribeReader

    private init(reader: SubscribeReader) { self.reader = reader }

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
        let handlers = SubscribeReader.Handlers(
            verdicts: { verdicts in
                for stamped in verdicts { onChange(Self.metered(stamped.verdict)) }
            },
            unreachable: { _ in onChange(nil) }
        )
        guard let reader = try? SubscribeReader.open(path: path, retry: .never, timeout: 2, handlers: handlers) else { return nil }
        return DaemonFeed(reader: reader)
    }

    private static func metered(_ verdict: Verdict) -> DaemonMetered? {
        verdict.interface.map { DaemonMetered(interface: $0, metered: verdict.metered) }
    }

    /// The descriptor of the connection the feed has open; nil once it closed.
    var openDescriptor: Int32? { reader.openDescriptor }

    /// Ends the reader thread: the socket is shut down, so its blocking read returns.
    func cancel() {
        reader.stop()
    }
}
