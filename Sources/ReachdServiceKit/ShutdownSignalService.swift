import Logging
import ServiceLifecycle

/// A daemon's shutdown signals in its service group: the first one (`ShutdownSignals.received()`) is logged and
/// ends this service, which shuts the group down gracefully; a shutdown for another reason ends it too.
struct ShutdownSignalService: Service {
    let signals: AsyncStream<Int32>
    let logger: Logger

    func run() async {
        for await signal in signals.cancelOnGracefulShutdown() {
            logger.info("signal \(signal): shutting down")
            return
        }
    }
}
