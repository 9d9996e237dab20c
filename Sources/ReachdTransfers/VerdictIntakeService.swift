import ReachdModel
import ServiceLifecycle

/// The scheduler's intake of host verdicts in reachd-transfers' service group: batches given to `take` wait in
/// one stream (from the start, also while the service starts up) and are consumed in order, by `consume`
/// (`TransferScheduler.run(verdicts:)`), from the group's start until graceful shutdown ends the stream.
struct VerdictIntakeService: Service {
    private let verdicts: AsyncStream<[StampedVerdict]>
    private let sink: AsyncStream<[StampedVerdict]>.Continuation
    private let consume: @Sendable (AsyncStream<[StampedVerdict]>) async -> Void

    init(consume: @escaping @Sendable (AsyncStream<[StampedVerdict]>) async -> Void) {
        (verdicts, sink) = AsyncStream.makeStream(of: [StampedVerdict].self)
        self.consume = consume
    }

    /// Queues a batch for the consumer (dropped once the stream has ended).
    func take(_ batch: [StampedVerdict]) {
        sink.yield(batch)
    }

    func run() async {
        await withGracefulShutdownHandler {
            await consume(verdicts)
        } onGracefulShutdown: { [sink] in
            sink.finish()
        }
    }
}
