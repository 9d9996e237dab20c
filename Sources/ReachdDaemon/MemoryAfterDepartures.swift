import CReachdMemory
import NIOCore
import ReachdServiceKit
import Synchronization

/// Hands back to the kernel what departed clients left behind. The memory their queues and lines held, a second
/// after a connection closes and every second while more keep closing: glibc's malloc keeps freed blocks in its
/// arenas (`malloc_trim`), so a flood of clients that never read would leave the daemon large for good. And, once
/// a flood (`floodDepartures` connections closed in the burst) has left (no connection closed for a second), the
/// pages of code and constants that serving it faulted in (`ReadOnlyPages`): its errors, limits, time-outs and drops,
/// code an idle daemon does not run; at most every `unmapIntervalSeconds`, so that a user who closes connections in
/// bursts cannot keep reachd faulting its code back in. One timer per burst of departures, none while nothing
/// happens.
final class MemoryAfterDepartures: Sendable {
    /// Connections closed in one burst that make a flood: a user's own comings and goings (reachctl, a desktop's
    /// session) stay far below it, and the code pages stay mapped.
    static let floodDepartures = 64
    /// The least time between two unmappings of the code pages.
    static let unmapIntervalSeconds: Int64 = 30

    private let loop: any EventLoop
    private let release: @Sendable (_ codePagesToo: Bool) -> Void
    private let planned = Atomic<Bool>(false)
    private let gone = Atomic<Int>(0)
    /// When the last connection closed, and when the code pages were last unmapped (the loop's clock, ns; -1: never).
    private let lastClose = Atomic<Int64>(0)
    private let lastUnmap = Atomic<Int64>(-1)

    /// `release` hands the memory back (tests give their own).
    init(loop: any EventLoop, release: @escaping @Sendable (_ codePagesToo: Bool) -> Void = MemoryAfterDepartures.handBack) {
        self.loop = loop
        self.release = release
    }

    /// `malloc_trim`, and with `codePagesToo` the unmapping of the read-only pages.
    static func handBack(codePagesToo: Bool) {
        _ = reachd_release_memory()
        if codePagesToo { ReadOnlyPages.release() }
    }

    /// A connection closed.
    func departed() {
        gone.add(1, ordering: .sequentiallyConsistent)
        lastClose.store(loop.now.uptimeNanoseconds.clampedToInt64, ordering: .sequentiallyConsistent)
        guard !planned.exchange(true, ordering: .sequentiallyConsistent) else { return }
        plan(in: .seconds(1))
    }

    private func plan(in delay: TimeAmount) {
        loop.scheduleTask(in: delay) { [self] in
            let now = loop.now.uptimeNanoseconds.clampedToInt64
            guard now - lastClose.load(ordering: .sequentiallyConsistent) >= TimeAmount.seconds(1).nanoseconds else {
                release(false)
                return plan(in: .seconds(1))
            }
            planned.store(false, ordering: .sequentiallyConsistent)
            let flood = gone.exchange(0, ordering: .sequentiallyConsistent) >= Self.floodDepartures
            let unmapped = lastUnmap.load(ordering: .sequentiallyConsistent)
            let unmap = flood && (unmapped < 0 || now - unmapped >= TimeAmount.seconds(Self.unmapIntervalSeconds).nanoseconds)
            if unmap { lastUnmap.store(now, ordering: .sequentiallyConsistent) }
            release(unmap)
        }
    }
}

private extension UInt64 {
    var clampedToInt64: Int64 { Int64(clamping: self) }
}
