import ReachdModel

/// Whether the wall clock can be trusted for jobs' times, as Android's JobScheduler decides it: once it reads no
/// earlier than the latest time the job table holds (a device without a real-time clock boots years in the past
/// until NTP steps it), once the system says it is synchronized (systemd-timesyncd's
/// `/run/systemd/timesync/synchronized`), or once it was set (NTP's step, an administrator's). Once trusted, it
/// stays so. Pure.
public struct ClockTrust: Hashable, Sendable {
    /// The latest time the job table held at start; nil once the clock is trusted.
    public private(set) var behind: Timestamp?

    /// `latest`: the job table's latest time (nil for an empty table: nothing to be behind).
    public init(latest: Timestamp?) { behind = latest }

    /// Looks at the clock again (`now`, and whether the system says it is synchronized); what it is still
    /// behind, nil once trusted.
    public mutating func check(now: Timestamp, synchronized: Bool) -> Timestamp? {
        if let latest = behind, synchronized || now >= latest { behind = nil }
        return behind
    }

    /// The clock was set: trusted from now on.
    public mutating func clockWasSet() { behind = nil }
}
