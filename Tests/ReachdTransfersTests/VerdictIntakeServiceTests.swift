import Logging
import ReachdModel
import ServiceLifecycle
import Synchronization
import XCTest
@testable import ReachdTransfers

/// The scheduler's verdict intake as a service: batches taken before and while it runs reach the consumer in order,
/// and graceful shutdown ends the stream, so the consumer returns (it is not cancelled).
final class VerdictIntakeServiceTests: XCTestCase {
    /// What the consumer saw: the sequences of each batch, and how its loop ended.
    private final class Consumed: Sendable {
        private let state = Mutex<(batches: [[UInt64]], ended: String?)>(([], nil))
        func record(_ batch: [StampedVerdict]) { state.withLock { $0.batches.append(batch.map(\.sequence)) } }
        func end(cancelled: Bool) { state.withLock { $0.ended = cancelled ? "cancelled" : "stream finished" } }
        var batches: [[UInt64]] { state.withLock { $0.batches } }
        var ended: String? { state.withLock { $0.ended } }
    }

    private func batch(_ sequences: UInt64...) -> [StampedVerdict] {
        sequences.map { sequence in
            let verdict = HostVerdict().verdict(host: "example.org", resolution: .failed("test"), decisions: [:], in: NetworkSnapshot(links: []))
            return StampedVerdict(verdict: verdict, sequence: sequence, timestamp: Timestamp(microseconds: Int64(sequence)))
        }
    }

    func testBatchesReachTheConsumerInOrderUntilGracefulShutdownEndsTheStream() async throws {
        let consumed = Consumed()
        let (progress, step) = AsyncStream.makeStream(of: Int.self)
        let intake = VerdictIntakeService { verdicts in
            for await batch in verdicts {
                consumed.record(batch)
                step.yield(consumed.batches.count)
            }
            consumed.end(cancelled: Task.isCancelled)
        }
        intake.take(batch(1, 2))
        var configuration = ServiceGroupConfiguration(services: [.init(service: intake)], logger: Logger(label: "test"))
        // A consumer that the shutdown does not end is cancelled after 10 s (and the test fails) instead of hanging.
        configuration.maximumGracefulShutdownDuration = .seconds(10)
        let group = ServiceGroup(configuration: configuration)
        let running = Task { try await group.run() }
        intake.take(batch(3))
        for await count in progress where count == 2 { break }
        await group.triggerGracefulShutdown()
        try await running.value
        XCTAssertEqual(consumed.batches, [[1, 2], [3]])
        XCTAssertEqual(consumed.ended, "stream finished")
    }
}
