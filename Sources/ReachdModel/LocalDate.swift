#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A day of the proleptic Gregorian calendar, as a local calendar names it (no time, no zone).
public struct LocalDate: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let year: Int
    /// 1 to 12.
    public let month: Int
    /// 1 to the month's length.
    public let day: Int

    /// nil when the day does not exist (month 13, 30 February ...) or the year is outside 1...9999.
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month), (1...Self.days(inMonth: month, of: year)).contains(day) else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// The day `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
    public init(daysSinceEpoch days: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let month = mp < 10 ? mp + 3 : mp - 9
        day = doy - (153 * mp + 2) / 5 + 1
        self.month = month
        year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// Days since 1970-01-01 (`days_from_civil`).
    public var daysSinceEpoch: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// ISO 8601 weekday: 1 is Monday, 7 is Sunday.
    public var isoWeekday: Int { ((daysSinceEpoch % 7 + 7 + 3) % 7) + 1 }

    public func adding(days: Int) -> LocalDate { LocalDate(daysSinceEpoch: daysSinceEpoch + days) }

    /// The first day of the month `months` after this date's month (negative: before).
    public func firstOfMonth(adding months: Int) -> LocalDate {
        let index = year * 12 + (month - 1) + months
        return LocalDate(year: index / 12, month: index % 12 + 1, day: 1) ?? self
    }

    public static func days(inMonth month: Int, of year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// `2026-11-26`.
    public var description: String {
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    /// Parses `description`'s form; nil for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.utf8.allSatisfy { (48...57).contains($0) } }),
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]) else { return nil }
        self.init(year: year, month: month, day: day)
    }

    public static func < (lhs: LocalDate, rhs: LocalDate) -> Bool { (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day) }
}

/// Maps instants to local dates and back: the host's time zone in the daemon, a fixed rule in tests.
public protocol LocalCalendar: Sendable {
    /// The local date at `time`.
    func date(at time: Timestamp) -> LocalDate
    /// The instant the local day `date` begins (its midnight, or the first instant after it when a DST change
    /// skips midnight).
    func startOfDay(_ date: LocalDate) -> Timestamp
}

/// The host's local time zone (`TZ`, `/etc/localtime`) through `localtime_r` and `mktime`.
public struct SystemCalendar: LocalCalendar {
    public init() {}

    public func date(at time: Timestamp) -> LocalDate {
        var seconds = time_t(time.microseconds >= 0 ? time.microseconds / 1_000_000 : (time.microseconds - 999_999) / 1_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return LocalDate(year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday))
            ?? LocalDate(daysSinceEpoch: Int(seconds) / 86_400)
    }

    public func startOfDay(_ date: LocalDate) -> Timestamp {
        var parts = tm()
        parts.tm_year = Int32(date.year - 1900)
        parts.tm_mon = Int32(date.month - 1)
        parts.tm_mday = Int32(date.day)
        parts.tm_isdst = -1
        return Timestamp(microseconds: Int64(mktime(&parts)) * 1_000_000)
    }
}
