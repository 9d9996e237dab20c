import Logging
import NIOCore
import ReachdModel
import ReachdTransferModel
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A background transfer's connection that gives way to other traffic (`YieldController`): told the connection its
/// clients open, it reads the kernel's round-trip estimate (`TCP_INFO`) every 10 ms and narrows or widens what the
/// connection may have in flight, until the attempt ends.
/// - Receiving (a download): the window the server may send into (`TCP_WINDOW_CLAMP`, which shrinks an offered window
///   from Linux 6.7 on), and reading paced to what that window lets through per round trip (`RatePacer.yield`: a full
///   receive buffer closes the window on any kernel). The estimate is the receive side's, from TCP timestamps:
///   without them it only ever falls, and such a connection does not yield.
/// - Sending (an upload): a window kept in user space (`SendWindow`). The body hands the socket a piece only once what
///   the kernel holds of the connection leaves room for it (`admit`), so no more than the window is ever in flight,
///   whatever the kernel's congestion control would send. The estimate is the smoothed round trip of the server's
///   ACKs.
final class YieldingConnection: Sendable {
    enum Side {
        case receiving, sending
    }

    /// The most a sending window grows to: Linux's largest send buffer by default (`tcp_wmem`).
    static let sendingMaximum = 4 << 20
    /// Where a sending window starts: about what a fresh connection sends in its first round trips.
    static let sendingInitial = 64 << 10

    private let side: Side
    private let connection = Mutex<(any Channel)?>(nil)
    private let controller: Mutex<YieldController>
    private let sending = Mutex(SendWindow())
    private let logger: Logger
    private let job: String
    private let pacer: RatePacer

    init(_ side: Side, job: String, pacer: RatePacer, logger: Logger) {
        self.side = side
        self.job = job
        self.pacer = pacer
        self.logger = logger
        let now = MonotonicClock.seconds()
        controller = Mutex(side == .receiving
            ? YieldController(maximum: Fetcher.receiveBufferBytes, now: now)
            : YieldController(maximum: Self.sendingMaximum, initial: Self.sendingInitial, slowStart: true, now: now))
    }

    /// A connection the attempt's clients opened (each request has its own: the latest is the one in use).
    func connected(_ channel: any Channel) {
        connection.withLock { $0 = channel }
    }

    /// Whether the transfer is held back now.
    var isYielding: Bool { controller.withLock { $0.isYielding } }

    /// Whether the window is below its largest, and so holds a sending body back: at its largest, TCP's own window
    /// (and send buffer) bound the connection, and the body hands over as it would without yielding.
    var isHolding: Bool { controller.withLock { $0.window < $0.maximum } }

    /// Samples and steers until the task is cancelled.
    func run() async {
        var applied: Int?
        var logged = 0.0
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(side == .receiving ? 20 : 10))
            guard let options = connection.withLock({ $0 }) as? any SocketOptionProvider,
                  let info = try? await KernelRoundTrips.read(from: options) else { continue }
            let now = MonotonicClock.seconds()
            let minimum = info.minimum > 0 ? Double(info.minimum) / 1e6 : nil
            let rtt: Double
            switch side {
            case .receiving:
                guard info.receive > 0, info.timestamps else { continue }
                rtt = Double(info.receive) / 1e6
            case .sending:
                guard info.smoothed > 0 else { continue }
                rtt = Double(info.smoothed) / 1e6
                noteSending(info, now: now)
            }
            let (window, held) = controller.withLock { controller -> (Int, Bool) in
                controller.use(segment: Int(side == .receiving ? info.receiveSegment : info.sendSegment))
                _ = controller.sample(rtt: rtt, now: now, pathMinimum: minimum)
                return (controller.window, controller.window < controller.maximum)
            }
            if now - logged >= 1 {
                logged = now
                let base = controller.withLock { $0.baseDelay } ?? 0
                logger.debug("job \(job): round trip \(Int(rtt * 1e6)) µs, base \(Int(base * 1e6)) µs, window \(window) B")
            }
            guard side == .receiving else { continue }
            pacer.yield(bytesPerSecond: held ? Int64(Double(window) / rtt) : nil)
            guard window != applied else { continue }
            do {
                try await options.unsafeSetSocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: TCP_WINDOW_CLAMP),
                                                        value: Int32(window)).get()
                applied = window
            } catch {
                logger.debug("job \(job): the window cannot be clamped (\(error)); reading is paced")
            }
        }
    }

    private func noteSending(_ info: KernelRoundTrips, now: Double) {
        sending.withLock { $0.read(acknowledged: info.acked, now: now) }
    }

    /// The size of the pieces a sending body hands over (`SendWindow.pieceBytes`); `largest` while not holding.
    func pieceBytes(largest: Int) -> Int {
        let (window, segment, maximum) = controller.withLock { ($0.window, $0.segment, $0.maximum) }
        return window < maximum ? SendWindow.pieceBytes(window: window, segment: segment, largest: largest) : largest
    }

    /// Waits until the kernel holds little enough of the connection that `bytes` more stay within the window (at
    /// once when nothing is held, no connection is known yet, or the window is the largest); early when cancelled.
    func admit(_ bytes: Int) async {
        while !Task.isCancelled {
            let (window, held) = controller.withLock { ($0.window, $0.window < $0.maximum) }
            guard held, let options = connection.withLock({ $0 }) as? any SocketOptionProvider,
                  let info = try? await KernelRoundTrips.read(from: options),
                  let wait = sending.withLock({ $0.wait(queued: info.queued, adding: bytes, window: window) }) else { return }
            try? await Task.sleep(for: .seconds(wait))
        }
    }
}

/// What the yielding needs of the kernel's `struct tcp_info` (linux/tcp.h), which Glibc's older copy lacks in part: the
/// receive-side round trip (`tcpi_rcv_rtt`, from TCP timestamps), the smoothed one of the ACKs (`tcpi_rtt`) and the
/// lowest one of the last minutes (`tcpi_min_rtt`, a moving minimum), in microseconds, the segment sizes, whether
/// timestamps are on, and what the kernel holds of a sending connection. The struct only ever grows at its end, so
/// the offsets are fixed.
struct KernelRoundTrips {
    var receive: UInt32
    var smoothed: UInt32
    var minimum: UInt32
    /// `tcpi_rcv_mss`: the segments the server sends.
    var receiveSegment: UInt32
    /// `tcpi_snd_mss`: the segments sent to the server.
    var sendSegment: UInt32
    /// `tcpi_options & TCPI_OPT_TIMESTAMPS`: the receive estimate comes from TCP timestamps.
    var timestamps: Bool
    /// `tcpi_bytes_acked`: the bytes the server acknowledged.
    var acked: UInt64
    /// The bytes sent and not acknowledged (`tcpi_bytes_sent` less `tcpi_bytes_retrans` and `tcpi_bytes_acked`; before
    /// Linux 5.5, `tcpi_unacked` segments), and those not sent yet (`tcpi_notsent_bytes`).
    var queued: Int

    /// `tcp_info` up to and with `tcpi_bytes_retrans` (offset 208): 216 bytes.
    private typealias Prefix = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    static func read(from options: any SocketOptionProvider) async throws -> KernelRoundTrips {
        let prefix: Prefix = try await options.unsafeGetSocketOption(level: .tcp, name: .tcp_info).get()
        return withUnsafeBytes(of: prefix) { raw in
            let sendSegment = raw.loadUnaligned(fromByteOffset: 16, as: UInt32.self)
            let acked = raw.loadUnaligned(fromByteOffset: 120, as: UInt64.self)
            let sent = raw.loadUnaligned(fromByteOffset: 200, as: UInt64.self)
            let resent = raw.loadUnaligned(fromByteOffset: 208, as: UInt64.self)
            let unacked = raw.loadUnaligned(fromByteOffset: 24, as: UInt32.self)
            let firstSent = sent >= resent ? sent - resent : 0
            let inFlight = sent == 0 ? UInt64(unacked) * UInt64(sendSegment) : firstSent >= acked ? firstSent - acked : 0
            let notSent = raw.loadUnaligned(fromByteOffset: 144, as: UInt32.self)
            return KernelRoundTrips(receive: raw.loadUnaligned(fromByteOffset: 92, as: UInt32.self),
                                    smoothed: raw.loadUnaligned(fromByteOffset: 68, as: UInt32.self),
                                    minimum: raw.loadUnaligned(fromByteOffset: 148, as: UInt32.self),
                                    receiveSegment: raw.loadUnaligned(fromByteOffset: 20, as: UInt32.self),
                                    sendSegment: sendSegment, timestamps: raw[5] & 1 != 0, acked: acked,
                                    queued: Int(clamping: min(inFlight, 1 << 40)) + Int(notSent))
        }
    }
}
