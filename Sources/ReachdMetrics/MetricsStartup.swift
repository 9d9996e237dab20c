import Logging
import NIOPosix
import ReachdConfig
import ReachdServiceKit

extension MetricsEndpoint {
    /// Starts the endpoint on `address` for either daemon. A socket path is prepared as the daemons' own
    /// sockets are (`SocketFile`: a stale socket replaced, a live one refused); a failure names the address.
    package static func start(on address: MetricsAddress, logger: Logger,
                              render: @escaping @Sendable () async -> [UInt8]) async throws -> MetricsEndpoint {
        do {
            if case .unix(let path) = address { try SocketFile.prepare(path: path) }
            return try await MetricsEndpoint(address: address, group: MultiThreadedEventLoopGroup.singleton, logger: logger, render: render)
        } catch {
            throw MetricsError("metrics: cannot listen on \(address): \(error)")
        }
    }
}
