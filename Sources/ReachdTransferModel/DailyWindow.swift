#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ReachdModel

/// A local time zone as the gate needs it: the offset from UTC in force at an instant. Passed in, so the
/// gate stays pure: the host's zone in the daemon, a fixed rule in the tests.
public protocol LocalTimeZone: Sendable {
    /// Seconds east of UTC at `time` (daylight saving time included).
    func offsetSeconds(at time: Timestamp) -> Int
}

/// The host's zone (`TZ`, `/etc/localtime`) through `localtime_r`.
public struct SystemTimeZone: LocalTimeZone {
    public init() {}

    public func offsetSeconds(at time: Timestamp) -> Int {
        var seconds = time_t(time.microseconds.floorDiv(1_000_000))
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return 0 }
        return Int(parts.tm_gmtoff)
    }
}

extension LocalTimeZone {
    /// Seconds of local wall-clock time since 1970-01-01 00:00 local, at `time`.
    func wallSeconds(at time: Timestamp) -> Int64 {
        time.microseconds.floorDiv(1_000_000) + Int64(offsetSeconds(at: time))
    }

    /// The first instant whose local wall-clock time is `wall` (seconds as `wallSeconds` counts them). A wall
    /// time that occurs twice (clocks set back) is its first occurrence; one that a change skips (clocks set
    /// forward) is the first instant after the gap.
    func instant(atWall wall: Int64) -> Timestamp {
        func utc(_ seconds: Int64) -> Timestamp { Timestamp(microseconds: seconds * 1_000_000) }
        // The offsets in force a day around: a zone changes at most once in that span.
        let offsets = Set([offsetSeconds(at: utc(wall - 86_400)), offsetSeconds(at: utc(wall + 86_400)), offsetSeconds(at: utc(wall))])
        let exact = offsets.map { wall - Int64($0) }.filter { wallSeconds(at: utc($0)) == wall }
        if let first = exact.min() { return utc(first) }
        // In a gap: the change lies between the readings with the larger and the smaller offset.
        var low = wall - Int64(offsets.max() ?? 0), high = wall - Int64(offsets.min() ?? 0)
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if wallSeconds(at: utc(middle)) < wall { low = middle } else { high = middle }
        }
        return utc(high)
    }
}

/// A daily window of local time, `01:00-06:00`; one whose end is before its start crosses midnight
/// (`22:00-06:00`). Membership is by the local clock, so it stays right across a DST change.
public struct DailyWindow: Hashable, Sendable, CustomStringConvertible {
    /// Minutes after local midnight, 0 to 1439; start and end differ.
    public let startMinute: Int
    public let endMinute: Int

    public init?(startMinute: Int, endMinute: Int) {
        guard (0..<1440).contains(startMinute), (0..<1440).contains(endMinute), startMinute != endMinute else { return nil }
        self.startMinute = startMinute
        self.endMinute = endMinute
    }

    /// Parses `HH:MM-HH:MM` (24 h; `24:00` as the end means midnight).
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = Self.minute(parts[0], end: false), let end = Self.minute(parts[1], end: true) else { return nil }
        self.init(startMinute: start, endMinute: end)
    }

    private static func minute(_ text: Substring, end: Bool) -> Int? {
        let pieces = text.split(separator: ":", omittingEmptySubsequences: false)
        guard pieces.count == 2, pieces.allSatisfy({ $0.count == 2 && $0.utf8.allSatisfy { (48...57).contains($0) } }),
              let hour = Int(pieces[0]), let minute = Int(pieces[1]), minute < 60 else { return nil }
        if end && hour == 24 && minute == 0 { return 0 }
        return hour < 24 ? hour * 60 + minute : nil
    }

    public var description: String { "\(Self.clock(startMinute))-\(Self.clock(endMinute))" }

    /// `01:00`.
    static func clock(_ minute: Int) -> String {
        let hour = minute / 60, rest = minute % 60
        return (hour < 10 ? "0" : "") + "\(hour):" + (rest < 10 ? "0" : "") + "\(rest)"
    }

    /// Whether the local clock is inside the window at `time`.
    public func contains(_ time: Timestamp, zone: any LocalTimeZone) -> Bool {
        let minute = Int(zone.wallSeconds(at: time).floorMod(86_400) / 60)
        return startMinute < endMinute ? (startMinute..<endMinute).contains(minute) : minute >= startMinute || minute < endMinute
    }

    /// The next instant after `time` at which the window opens (inside: closes).
    public func nextEdge(after time: Timestamp, zone: any LocalTimeZone) -> Timestamp {
        let edge = contains(time, zone: zone) ? endMinute : startMinute
        let today = zone.wallSeconds(at: time).floorDiv(86_400)
        for day in today...(today + 2) {
            let instant = zone.instant(atWall: day * 86_400 + Int64(edge) * 60)
            if instant > time { return instant }
        }
        return Timestamp(microseconds: time.microseconds + 86_400_000_000)
    }
}

/// Local times in reasons: `01:00` later within the next 24 hours, else (further, or past) `2026-11-27 01:00`.
enum LocalClockText {
    static func text(_ time: Timestamp, now: Timestamp, zone: any LocalTimeZone) -> String {
        let wall = zone.wallSeconds(at: time)
        let clock = DailyWindow.clock(Int(wall.floorMod(86_400) / 60))
        let soon = time > now && time.microseconds - now.microseconds < 86_400_000_000
        return soon ? clock : "\(LocalDate(daysSinceEpoch: Int(wall.floorDiv(86_400)))) \(clock)"
    }
}

extension Int64 {
    /// The remainder with the divisor's sign (always 0 ..< divisor for a positive divisor).
    func floorMod(_ divisor: Int64) -> Int64 { ((self % divisor) + divisor) % divisor }

    /// The quotient rounded towards minus infinity.
    func floorDiv(_ divisor: Int64) -> Int64 { (self - floorMod(divisor)) / divisor }
}
