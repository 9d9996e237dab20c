import CReachdTime
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Tells when promises made on the wall clock must be planned again, as systemd's manager re-plans its calendar
/// timers: the wall clock was set (an NTP step, `date -s`, and every resume from suspend: a `CLOCK_REALTIME`
/// timerfd armed with `TFD_TIMER_CANCEL_ON_SET`, which the kernel cancels then), or the local time zone changed
/// (the zone file the C library reads, followed with `FollowedFile`). At a zone change the C library is told
/// first (`tzset`): `localtime_r` never reloads the zone by itself.
package final class TimeChanges: @unchecked Sendable {
    package enum Change: Sendable, Equatable {
        case clockSet
        case zoneChanged
    }

    /// The file the C library takes the local zone from: `/etc/localtime` unless `TZ` is set (then the zone is
    /// `TZ`'s for the process's whole life: the C library never reads the variable's file again).
    package static var systemZoneFile: String? { getenv("TZ") == nil ? "/etc/localtime" : nil }
    /// Whether systemd-timesyncd says the wall clock is synchronized (`/run/systemd/timesync/synchronized`).
    package static var clockSynchronized: Bool { access("/run/systemd/timesync/synchronized", F_OK) == 0 }
    /// A zone file longer than this is compared by its beginning (real ones are a few KiB).
    static var maximumZoneFileSize: Int { 1 << 20 }
    /// How far ahead the cancellable timer is armed; when it does expire, it is armed again.
    static var armedAheadSeconds: Int { 366 * 86_400 }

    private let timer: Int32
    private let thread: PollThread
    private let zone: FollowedFile<[UInt8]>?
    private let onChange: @Sendable (Change) -> Void

    /// `zoneFile`: nil follows no zone. `onChange` runs on this source's threads.
    package init(zoneFile: String? = TimeChanges.systemZoneFile, onChange: @escaping @Sendable (Change) -> Void) throws(SystemCallError) {
        let fd = timerfd_create(CLOCK_REALTIME, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard fd >= 0 else { throw SystemCallError(call: "timerfd_create", errno: .current) }
        do {
            thread = try PollThread()
            let zoneRead = Atomic<Bool>(false)
            zone = try zoneFile.map { path throws(SystemCallError) in
                try FollowedFile(path: path, read: { SmallFile.bytes(at: $0, limit: Self.maximumZoneFileSize) ?? [] }) { _ in
                    // The first reading is the zone the process started with, published by `start`.
                    guard zoneRead.exchange(true, ordering: .relaxed) else { return }
                    tzset()
                    onChange(.zoneChanged)
                }
            }
        } catch {
            close(fd)
            throw error
        }
        timer = fd
        self.onChange = onChange
    }

    deinit {
        stop()
        close(timer)
    }

    /// Arms the timer and reads the zone's file, then follows both on threads of their own.
    package func start() throws(SystemCallError) {
        try arm()
        try zone?.start()
        try thread.start(
            descriptors: { [timer] in ([pollfd(fd: timer, events: Int16(POLLIN), revents: 0)], -1) },
            ready: { [unowned self] outcome in
                if case .ready(let fds) = outcome, fds.first?.revents ?? 0 != 0 { expired() }
            }
        )
    }

    /// Stops following; `onChange` is not called after this returns. Never on one of this source's threads.
    package func stop() {
        thread.stop()
        zone?.stop()
    }

    /// The timer was cancelled (the clock was set) or, a year on, expired: armed again either way.
    private func expired() {
        var count: UInt64 = 0
        let n = read(timer, &count, MemoryLayout<UInt64>.size)
        let cancelled = n < 0 && errno == ECANCELED
        guard n == MemoryLayout<UInt64>.size || cancelled else { return }
        try? arm()
        if cancelled { onChange(.clockSet) }
    }

    private func arm() throws(SystemCallError) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var due = itimerspec()
        // Never earlier than 2096: a wall clock read through a shim (the tests shift it by years) must not arm a timer
        // the kernel's own clock has passed, which would expire at once, again and again, and miss the clock's set.
        due.it_value.tv_sec = max(now.tv_sec + Int(Self.armedAheadSeconds), 4_000_000_000)
        guard timerfd_settime(timer, Int32(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET), &due, nil) == 0 else {
            throw SystemCallError(call: "timerfd_settime", errno: .current)
        }
    }
}
