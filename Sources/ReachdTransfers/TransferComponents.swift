import ReachdMonitor
import ReachdServiceKit

// The parts of reachd-transfers that start before its service group runs, each stopped when the group shuts down.

extension UserFiles: StartedComponent {
    /// Ends the file-operation threads (`shutdown`).
    package func stop() async { shutdown() }
}

extension Fetcher: StartedComponent {
    /// Shuts the HTTP client down (`shutdown`).
    func stop() async { await shutdown() }
}

extension ReachdVerdicts: StartedComponent {}

extension NetworkView: StartedComponent {}

extension TransferScheduler: StartedComponent {
    /// Stops every transfer; their partial files stay for the next start (`stopAll`).
    func stop() async { await stopAll() }
}

extension TransferServer: StartedComponent {
    /// Stops serving and removes the socket file (`shutdown`).
    func stop() async { await shutdown() }
}

extension TransferBusService: StartedComponent {}
