import ReachdModel

/// A rate cap as a token bucket: bytes move at `rate` per second on average, at most a quarter of a second's worth
/// (16 KiB at least) at once after a pause. Times are seconds on a monotonic clock of the caller's.
public struct TokenBucket: Hashable, Sendable {
    public private(set) var rate: Int64
    private var tokens: Double
    private var last: Double

    public init(rate: Int64, now: Double) {
        self.rate = max(1, rate)
        tokens = 0
        last = now
    }

    private var burst: Double { max(16 * 1024, Double(rate) / 4) }

    /// A new rate from now on; what was owed stays owed (at the new rate).
    public mutating func setRate(_ rate: Int64, now: Double) {
        refill(now)
        self.rate = max(1, rate)
        tokens = min(tokens, burst)
    }

    /// Counts `bytes` moved at `now`; returns the seconds to wait before moving more (0: none).
    public mutating func take(_ bytes: Int, now: Double) -> Double {
        refill(now)
        tokens -= Double(bytes)
        return tokens >= 0 ? 0 : -tokens / Double(rate)
    }

    private mutating func refill(_ now: Double) {
        if now > last { tokens = min(burst, tokens + (now - last) * Double(rate)) }
        last = max(last, now)
    }
}

extension TokenBucket {
    /// The caps a job or an instance may have, in bytes per second (`ByteRate`'s range).
    public static let rates = ByteRate.minimum...ByteRate.maximum
}
