#if canImport(Glibc)
import Glibc
#endif

/// `CLOCK_MONOTONIC`, for deadlines and timeouts that must not jump with the wall clock.
public enum MonotonicClock {
    /// Seconds since an arbitrary start.
    public static func seconds() -> Double {
        let now = timespec.monotonic()
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Nanoseconds since the same start.
    public static func nanoseconds() -> UInt64 {
        let now = timespec.monotonic()
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Microseconds since the same start (sd-bus's timeouts are on this clock, in µs).
    public static func microseconds() -> UInt64 {
        let now = timespec.monotonic()
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }
}

private extension timespec {
    static func monotonic() -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return now
    }
}
