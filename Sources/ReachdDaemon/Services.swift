import ReachdMonitor
import ReachdServiceKit

// The daemon's parts that start before its service group runs, stopped by it (`DaemonServices`).

extension BusService: StartedComponent {}

extension NetworkManagerFace: StartedComponent {}

extension NetworkView: StartedComponent {}

extension SocketServer: StartedComponent {
    /// Stops serving and removes the socket file (`shutdown`).
    package func stop() async { await shutdown() }
}
