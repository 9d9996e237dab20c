import CReachdMemory
import NIOCore
import ReachdServiceKit
import Synchronization

/// A second after clients leave, hands back to the kernel what serving them left behind. The memory their queues
/// and lines held: glibc's malloc keeps freed blocks in its arenas (`malloc_trim`), so a flood of clients that
/// never read would leave the daemon large for good. And, after a flood (`floodDepartures` connections closed
/// since the last release), the pages of code and constants that serving it faulted in (`ReadOnlyPages`): its
/// errors, limits, time-outs and drops, code an idle daemon does not run. One timer per burst of departures, none
/// while nothing happens.
final class MemoryAfterDepartures: Sendable {
    /// Connections closed within one burst (a second from the first) that make a flood: a user's own comings and
    /// goings (reachctl, a desktop's session) stay far below it, and the code pages stay mapped.
    static let floodDepartures = 64

    private let loop: any EventLoop
    private let planned = Atomic<Bool>(false)
    private let gone = Atomic<Int>(0)

    init(loop: any EventLoop) { self.loop = loop }

    /// A connection closed.
    func departed() {
        gone.add(1, ordering: .relaxed)
        guard !planned.exchange(true, ordering: .relaxed) else { return }
        loop.scheduleTask(in: .seconds(1)) { [self] in
            planned.store(false, ordering: .relaxed)
            _ = reachd_release_memory()
            if gone.exchange(0, ordering: .relaxed) >= Self.floodDepartures { ReadOnlyPages.release() }
        }
    }
}
