import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM and SIGINT without libdispatch: the signals are blocked in every thread and taken with
/// `sigwait(3)` by the main thread, which has nothing else to do. (A dispatch signal source, or Swift's
/// async `main` parked in `dispatch_main`, would start libdispatch's machinery, whose worker-pool monitor
/// wakes the daemon every second.)
public enum ShutdownSignals {
    private static let handled: [Int32] = [SIGTERM, SIGINT]
    private static let handler = Mutex<(@Sendable (Int32) -> Void)?>(nil)

    /// Blocks the signals; call first thing in `main`, before any thread exists, so every thread inherits it.
    public static func block() {
        var set = signalSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// The signals from now on (a graceful shutdown of the daemon's service group, see `DaemonServices`). Until
    /// this is called, a signal ends the process (status 128+signal); after the first, a second one does.
    package static func received() -> AsyncStream<Int32> {
        let (signals, sink) = AsyncStream.makeStream(of: Int32.self)
        handler.withLock { $0 = { sink.yield($0) } }
        return signals
    }

    /// Waits for signals on the calling thread, forever. The first one goes to the stream `received()` returned,
    /// or ends the process (status 128+signal) while there is none; a second one ends it at once.
    public static func waitForever() -> Never {
        var set = signalSet()
        var signal: Int32 = 0
        var received = 0
        while true {
            guard sigwait(&set, &signal) == 0 else { continue }
            received += 1
            guard received == 1, let body = handler.withLock({ $0 }) else { _exit(128 + signal) }
            body(signal)
        }
    }

    private static func signalSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in handled { sigaddset(&set, signal) }
        return set
    }
}
