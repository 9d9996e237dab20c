/// How a yielding upload keeps to its window in user space (a sender cannot set TCP's own): the body hands the socket
/// a piece only once what the kernel holds of the connection (sent and not acknowledged, or not sent yet) leaves room
/// for it within the window `YieldController` decides. So no more is handed over while the kernel holds the window,
/// whatever its congestion control would send, and the server's ACKs clock what follows. Times in seconds, sizes in
/// bytes.
public struct SendAdmission: Sendable {
    /// Bytes the server acknowledged per second, smoothed over the readings (0: not known yet).
    public private(set) var drainRate = 0.0
    private var acknowledged: UInt64 = 0
    private var readAt: Double?

    public init() {}

    /// What the kernel holds of a connection: bytes sent and not acknowledged, and those written to the socket but not
    /// sent yet. From `tcpi_bytes_sent` (retransmissions included), `tcpi_bytes_retrans`, `tcpi_bytes_acked` (which
    /// counts the SYN: one byte low, and clamped at none) and `tcpi_notsent_bytes`; a kernel before Linux 4.19 has no
    /// `tcpi_bytes_sent` (0), and the unacknowledged segments (`tcpi_unacked`, of `segment` bytes) count instead.
    /// Counts that do not add up give nothing in flight.
    public static func held(sent: UInt64, retransmitted: UInt64, acknowledged: UInt64, unacknowledgedSegments: UInt32,
                            segment: UInt32, notSent: UInt32) -> Int {
        let firstSent = sent >= retransmitted ? sent - retransmitted : 0
        let inFlight = sent == 0 ? UInt64(unacknowledgedSegments) * UInt64(segment) : firstSent >= acknowledged ? firstSent - acknowledged : 0
        return Int(min(inFlight, 1 << 40)) + Int(notSent)
    }

    /// The kernel's count of acknowledged bytes (`tcpi_bytes_acked`) at `now`, read every few milliseconds.
    public mutating func read(acknowledged total: UInt64, now: Double) {
        if let readAt, now > readAt, total >= acknowledged {
            let rate = Double(total - acknowledged) / (now - readAt)
            drainRate = drainRate == 0 ? rate : 0.875 * drainRate + 0.125 * rate
        }
        (acknowledged, readAt) = (total, now)
    }

    /// How long to wait before asking again whether `bytes` more fit `window` with `queued` held by the kernel; nil:
    /// they may go now (always when nothing is held, so that a piece larger than the window still goes alone). As
    /// long as the excess takes to drain at the rate the server acknowledges, within 1 to 10 ms.
    public func wait(queued: Int, adding bytes: Int, window: Int) -> Double? {
        let excess = queued + bytes - window
        guard queued > 0, excess > 0 else { return nil }
        guard drainRate > 0 else { return 0.002 }
        return min(0.01, max(0.001, Double(excess) / drainRate))
    }

    /// The size of the pieces handed to the socket: a quarter of the window in whole segments, one segment at least,
    /// `largest` at most.
    public static func pieceBytes(window: Int, segment: Int, largest: Int) -> Int {
        let segment = max(1, segment)
        return max(1, min(largest, max(segment, window / 4 / segment * segment)))
    }
}
