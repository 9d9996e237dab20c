import CReachdTime
#if canImport(Glibc)
import Glibc
#endif

/// Steps the host's real wall clock by one nanosecond and back (`ADJ_SETOFFSET` of +1 ns, then of -1 ns; needs
/// CAP_SYS_TIME): the clock ends where it was, and the kernel has told every `TFD_TIMER_CANCEL_ON_SET` timer
/// that it was set, as at an NTP step or a resume. The errno of a refusal is thrown.
public enum ClockStep {
    public struct Refused: Error, CustomStringConvertible {
        public let errno: Int32
        public var description: String { "adjtimex(ADJ_SETOFFSET): \(String(cString: strerror(errno)))" }
    }

    public static func byANanosecondAndBack() throws {
        for (seconds, nanoseconds) in [(0, 1), (-1, 999_999_999)] {
            var change = timex()
            change.modes = UInt32(ADJ_SETOFFSET | ADJ_NANO)
            change.time.tv_sec = seconds
            change.time.tv_usec = nanoseconds
            guard adjtimex(&change) >= 0 else { throw Refused(errno: errno) }
        }
    }
}
