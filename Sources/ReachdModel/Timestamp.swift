#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A wall-clock time with microsecond precision, written as RFC 3339 in UTC.
public struct Timestamp: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Microseconds since the Unix epoch.
    public var microseconds: Int64

    public init(microseconds: Int64) { self.microseconds = microseconds }

    /// The current wall-clock time (`clock_gettime(CLOCK_REALTIME)`).
    public static func now() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(microseconds: Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1_000)
    }

    /// `2026-11-22T03:52:02.123456Z`.
    public var description: String {
        var out: [UInt8] = []
        append(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `description`'s bytes, building no strings on the way (events are encoded a thousand at a time).
    public func append(to out: inout [UInt8]) {
        var seconds = time_t(microseconds.floorDiv(1_000_000))
        let micros = microseconds - Int64(seconds) * 1_000_000
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int64, _ width: Int) {
            let text = String(value).utf8
            out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: max(0, width - text.count)))
            out.append(contentsOf: text)
        }
        pad(Int64(parts.tm_year) + 1900, 4)
        out.append(UInt8(ascii: "-"))
        pad(Int64(parts.tm_mon) + 1, 2)
        out.append(UInt8(ascii: "-"))
        pad(Int64(parts.tm_mday), 2)
        out.append(UInt8(ascii: "T"))
        pad(Int64(parts.tm_hour), 2)
        out.append(UInt8(ascii: ":"))
        pad(Int64(parts.tm_min), 2)
        out.append(UInt8(ascii: ":"))
        pad(Int64(parts.tm_sec), 2)
        out.append(UInt8(ascii: "."))
        pad(micros, 6)
        out.append(UInt8(ascii: "Z"))
    }

    /// Parses RFC 3339 as written by `description` (any fraction length, `Z` or a numeric offset).
    public init?(rfc3339 text: String) {
        let chars = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int32? {
            guard range.upperBound <= chars.count else { return nil }
            var value: Int32 = 0
            for c in chars[range] {
                guard c >= 48, c <= 57 else { return nil }
                value = value * 10 + Int32(c - 48)
            }
            return value
        }
        guard chars.count >= 20, chars[4] == 45, chars[7] == 45, chars[10] == 84 || chars[10] == 116,
              chars[13] == 58, chars[16] == 58,
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19)
        else { return nil }
        var index = 19
        var micros: Int64 = 0
        if chars[index] == 46 {
            index += 1
            var digits = 0
            while index < chars.count, chars[index] >= 48, chars[index] <= 57 {
                if digits < 6 { micros = micros * 10 + Int64(chars[index] - 48) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 6) { micros *= 10 }
        }
        guard index < chars.count else { return nil }
        var offsetSeconds: Int64 = 0
        if chars[index] == 90 || chars[index] == 122 {
            guard index + 1 == chars.count else { return nil }
        } else if chars[index] == 43 || chars[index] == 45, index + 6 == chars.count, chars[index + 3] == 58,
                  let oh = number(index + 1..<index + 3), let om = number(index + 4..<index + 6) {
            offsetSeconds = Int64(oh * 3600 + om * 60) * (chars[index] == 45 ? -1 : 1)
        } else {
            return nil
        }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let epoch = Int64(timegm(&parts)) - offsetSeconds
        self.microseconds = epoch * 1_000_000 + micros
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.microseconds < rhs.microseconds }
}

extension Int64 {
    fileprivate func floorDiv(_ divisor: Int64) -> Int64 {
        let q = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? q - 1 : q
    }
}
