import Foundation
import ReachdClient
import ReachdModel
import ReachdProtocol

/// A `subscribe` connection to reachd read on its own thread.
final class DaemonSubscription: @unchecked Sendable {
    private let connection: ReachdConnection

    private init(connection: ReachdConnection) { self.connection = connection }

    /// Connects and subscribes; returns the subscription and the current verdict.
    static func open(path: String, target: ReachabilityMonitor.Target) throws -> (DaemonSubscription, StampedVerdict) {
        let connection = try ReachdConnection(path: path)
        let hosts: [String] = switch target {
        case .internet: []
        case .host(let host): [host]
        }
        let first = try connection.verdict(for: Request(op: .subscribe, hosts: hosts), timeout: 30)
        return (DaemonSubscription(connection: connection), first)
    }

    /// Reads events on a new thread until the connection ends or `cancel` is called.
    func run(_ onEvent: @escaping @Sendable (StampedVerdict) -> Void) {
        let thread = Thread { [self] in
            while true {
                guard let reply = try? connection.nextReply() else { return }
                if case .event(let verdict) = reply { onEvent(verdict) }
            }
        }
        thread.name = "reachability-daemon"
        thread.start()
    }

    /// Ends the reader thread: the socket is shut down, so its blocking read returns.
    func cancel() {
        shutdown(connection.fileDescriptor, Int32(SHUT_RDWR))
    }
}
