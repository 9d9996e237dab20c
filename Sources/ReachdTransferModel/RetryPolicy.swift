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
