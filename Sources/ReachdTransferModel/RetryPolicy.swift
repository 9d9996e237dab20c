/// Exponential backoff with jitter for 5xx answers and network errors; `Retry-After` is honoured.
public struct RetryPolicy: Hashable, Sendable {
    public var baseSeconds: Double
    public var maximumSeconds: Double
    /// Failed attempts in a row (without progress) before the job fails.
    public var maximumAttempts: Int

    public init(baseSeconds: Double = 1, maximumSeconds: Double = 300, maximumAttempts: Int = 10) {
        self.baseSeconds = baseSeconds
        self.maximumSeconds = maximumSeconds
        self.maximumAttempts = maximumAttempts
    }

    /// Seconds to wait before attempt `attempt + 1` (attempt counts from 1), or nil to give up.
    /// `jitter` in 0...1 spreads retries of many clients: the delay is between half and all of the backoff.
    /// A server's Retry-After wins when it asks for longer (capped at the maximum).
    public func delay(afterAttempt attempt: Int, retryAfter: Double?, jitter: Double) -> Double? {
        guard attempt < maximumAttempts else { return nil }
        let exponent = min(Double(max(attempt, 1) - 1), 30)
        let backoff = min(maximumSeconds, baseSeconds * pow2(exponent))
        let jittered = backoff * (0.5 + 0.5 * min(max(jitter, 0), 1))
        guard let retryAfter else { return jittered }
        return min(maximumSeconds, max(jittered, retryAfter))
    }

    private func pow2(_ exponent: Double) -> Double {
        var value = 1.0
        for _ in 0..<Int(exponent) { value *= 2 }
        return value
    }

    /// Seconds from `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an IMF-fixdate relative to `now` (Unix seconds).
    public static func retryAfterSeconds(_ value: String, now: Double) -> Double? {
        let text = value.trimmingSpaces
        if let seconds = decimal(text) { return Double(seconds) }
        guard let date = HTTPDate.unixSeconds(text) else { return nil }
        return max(0, Double(date) - now)
    }
}

/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the HTTP date format.
public enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    public static func unixSeconds(_ text: String) -> Int64? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", let day = Int64(parts[1]),
              let monthIndex = months.firstIndex(of: String(parts[2])), let year = Int64(parts[3]) else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, let h = Int64(clock[0]), let m = Int64(clock[1]), let s = Int64(clock[2]),
              (1...31).contains(day), (0...23).contains(h), (0...59).contains(m), (0...60).contains(s) else { return nil }
        return daysFromCivil(year: year, month: Int64(monthIndex + 1), day: day) * 86400 + h * 3600 + m * 60 + s
    }

    /// Days since 1970-01-01 (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }
}

/// A non-negative decimal number of plain ASCII digits (no sign, no spaces), as HTTP writes them.
func decimal<S: StringProtocol>(_ text: S) -> Int64? {
    guard !text.isEmpty, text.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
    return Int64(text)
}

extension String {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
