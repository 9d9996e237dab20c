import Foundation
@_exported import ReachdTransferModel
import ReachdClient
import ReachdProtocol
import ReachdTransferClient
import ReachdTransferProtocol

/// The download queue of `reachd-transfers` for Swift apps: add jobs that wait for an unmetered route,
/// control them, follow their progress.
///
///     let queue = TransferQueue()
///     let job = try await queue.add(DownloadSpec(url: "https://mirror.example/big.iso", output: "/srv/big.iso"))
///     for try await update in queue.updates(of: job.id) { print(update.state, update.bytesMoved) }
public final class TransferQueue: Sendable {
    /// The service's socket.
    public let socketPath: String
    /// The instance asked, as errors name it.
    private let daemon: ServingDaemon

    /// `socketPath` nil: `$REACHD_TRANSFERS_SOCKET`, else the system instance's socket for `system` (default: when
    /// running as root), else this user's own instance (`$XDG_RUNTIME_DIR/reachd-transfers.sock`).
    public init(socketPath: String? = nil, system: Bool = getuid() == 0) {
        let environment = ProcessInfo.processInfo.environment
        daemon = .transfers(system: system)
        self.socketPath = TransferSocketPath.clientPath(explicit: socketPath, system: system, environment: environment)
            ?? "/run/user/\(getuid())/reachd-transfers.sock"
    }

    /// Queues a download; the output path must be absolute and writable by this process's user.
    public func add(_ spec: DownloadSpec) async throws -> Job { try await job(TransferRequest(op: .add, download: spec)) }

    /// This user's jobs (root, on the system instance: everyone's), oldest first.
    public func jobs() async throws -> [Job] {
        let (path, daemon) = (socketPath, daemon)
        return try await Self.blocking { try TransferClient(path: path, daemon: daemon).jobs(TransferRequest(op: .list)) }
    }

    public func job(_ id: String) async throws -> Job { try await job(TransferRequest(op: .show, job: id)) }
    public func pause(_ id: String) async throws -> Job { try await job(TransferRequest(op: .pause, job: id)) }
    public func resume(_ id: String) async throws -> Job { try await job(TransferRequest(op: .resume, job: id)) }
    public func cancel(_ id: String) async throws -> Job { try await job(TransferRequest(op: .cancel, job: id)) }

    /// The job now, then every change (state, and progress a few times a second) until it ends.
    public func updates(of id: String) -> AsyncThrowingStream<Job, any Error> {
        let (path, daemon) = (socketPath, daemon)
        return AsyncThrowingStream { continuation in
            let client: TransferClient
            do {
                client = try TransferClient(path: path, daemon: daemon)
            } catch {
                return continuation.finish(throwing: error)
            }
            // A consumer that stops listening ends the reader: its blocking read returns.
            let fd = client.fileDescriptor
            continuation.onTermination = { _ in shutdown(fd, Int32(SHUT_RDWR)) }
            // Handed over to the reader thread, which alone uses it from here on.
            nonisolated(unsafe) let reader = client
            let thread = Thread {
                do {
                    guard var job = try reader.jobs(TransferRequest(op: .watch, job: id)).first else {
                        throw ClientError(.refused(ProtocolError(.notFound, "no job \(id)")), talkingTo: daemon)
                    }
                    while true {
                        continuation.yield(job)
                        if job.state.isTerminal { break }
                        guard let next = try reader.nextEvent(timeout: nil) else { break }
                        job = next
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            thread.name = "reachd-transfers-updates"
            thread.start()
        }
    }

    private func job(_ request: TransferRequest) async throws -> Job {
        let (path, daemon) = (socketPath, daemon)
        return try await Self.blocking { try TransferClient(path: path, daemon: daemon).job(request) }
    }

    /// Runs a blocking socket exchange on a thread of its own, off the concurrency pool.
    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}
