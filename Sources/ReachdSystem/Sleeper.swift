/// How a long-lived task waits between rounds: `Task.sleep`, or in reachd an event loop's timer
/// (`Sleeper.eventLoops` in ReachdServiceKit). Swift's `Task.sleep` arms libdispatch's timers, which start its
/// worker pool and the pool's monitor, a wake-up every second for the life of the process.
package struct Sleeper: Sendable {
    private let wait: @Sendable (Duration) async throws -> Void

    package init(_ wait: @escaping @Sendable (Duration) async throws -> Void) {
        self.wait = wait
    }

    /// Waits `duration`; throws `CancellationError` when the task is cancelled first.
    package func sleep(for duration: Duration) async throws {
        try await wait(duration)
    }

    /// `Task.sleep`.
    package static let task = Sleeper { try await Task.sleep(for: $0) }
}
