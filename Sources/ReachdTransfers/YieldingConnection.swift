import Logging
import NIOCore
import ReachdModel
import ReachdTransferModel
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A background transfer's connection that gives way to other traffic (`YieldController`): told the connection its
/// clients open, it reads the kernel's round-trip estimate (`TCP_INFO`) every 20 ms (receiving) or 10 ms (sending)
/// and narrows or widens the connection's window, until the attempt ends. Each new connection (a redirect's, to
/// another path) starts afresh.
/// - Receiving (a download): the window the server may send into (`TCP_WINDOW_CLAMP`, which shrinks an offered window
///   from Linux 6.7 on), and reading paced to what that window lets through per round trip (`RatePacer.yield`: a full
///   receive buffer closes the window on any kernel). The estimate is the receive side's, from TCP timestamps:
///   without them it only ever falls, and such a connection does not yield.
/// - Sending (an upload): a window kept in user space (`SendAdmission`): the body hands the socket a piece only once
///   what the kernel holds of the connection leaves room for it (`admit`). The estimate is the smoothed round trip of
///   the server's ACKs.
final class YieldingConnection: Sendable {
    enum Side {
        /// A download's, whose reading `pacer` paces.
        case receiving(RatePacer)
        case sending
    }

    /// The most a sending window grows to: Linux's largest send buffer by default (`tcp_wmem`).
    static let sendingMaximum = 4 << 20
    /// Where a sending window starts: about what a fresh connection sends in its first round trips.
    static let sendingInitial = 64 << 10

    /// The connection in use, its window and, when sending, how pieces are admitted; `generation` counts connections.
    private struct Steering {
        var connection: (any Channel)?
        var generation = 0
        var controller: YieldController
        var admission = SendAdmission()
    }

    private let side: Side
    private let steering: Mutex<Steering>
    private let logger: Logger
    private let job: String

    init(_ side: Side, job: String, logger: Logger) {
        self.side = side
        self.job = job
        self.logger = logger
        steering = Mutex(Steering(controller: Self.freshController(for: side)))
    }

    private static func freshController(for side: Side) -> YieldController {
        let now = MonotonicClock.seconds()
        return switch side {
        case .receiving: YieldController(maximum: Fetcher.receiveBufferBytes, now: now)
        case .sending: YieldController(maximum: sendingMaximum, initial: sendingInitial, slowStart: true, now: now)
        }
    }

    /// A connection the attempt's clients opened (each request has its own: the latest is the one in use). Another
    /// connection may take another path (a redirect to another host): its base delay and window start afresh.
    func connected(_ channel: any Channel) {
        steering.withLock { steering in
            guard steering.connection !== channel else { return }
            steering = Steering(connection: channel, generation: steering.generation + 1, controller: Self.freshController(for: side))
        }
    }

    /// Whether the transfer is held back now.
    var isYielding: Bool { steering.withLock { $0.controller.isYielding } }

    /// Samples and steers until the task is cancelled.
    func run() async {
        var applied: (generation: Int, window: Int)?
        var logged = 0.0
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(side.isReceiving ? 20 : 10))
            guard let (options, generation) = steering.withLock({ steering in
                      (steering.connection as? any SocketOptionProvider).map { ($0, steering.generation) } }),
                  let info = try? await TCPInfoReading.read(from: options) else { continue }
            let now = MonotonicClock.seconds()
            let minimum = info.minimum > 0 ? Double(info.minimum) / 1e6 : nil
            let rtt = side.isReceiving ? Double(info.receive) / 1e6 : Double(info.smoothed) / 1e6
            guard rtt > 0, !side.isReceiving || info.timestamps else { continue }
            let steered = steering.withLock { steering -> (window: Int, holding: Bool, base: Double?)? in
                guard steering.generation == generation else { return nil }
                steering.controller.use(segment: Int(side.isReceiving ? info.receiveSegment : info.sendSegment))
                if !side.isReceiving { steering.admission.read(acknowledged: info.acked, now: now) }
                _ = steering.controller.sample(rtt: rtt, now: now, pathMinimum: minimum)
                let controller = steering.controller
                return (controller.window, controller.window < controller.maximum, controller.baseDelay)
            }
            guard let steered else { continue }
            if now - logged >= 1 {
                logged = now
                logger.debug("job \(job): round trip \(Int(rtt * 1e6)) µs, base \(Int((steered.base ?? 0) * 1e6)) µs, window \(steered.window) B")
            }
            guard case .receiving(let pacer) = side else { continue }
            pacer.yield(bytesPerSecond: steered.holding ? Int64(Double(steered.window) / rtt) : nil)
            guard applied?.generation != generation || applied?.window != steered.window else { continue }
            do {
                try await options.unsafeSetSocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: TCP_WINDOW_CLAMP),
                                                        value: Int32(steered.window)).get()
                applied = (generation, steered.window)
            } catch {
                logger.debug("job \(job): the window cannot be clamped (\(error)); reading is paced")
            }
        }
    }

    /// The size of the pieces a sending body hands over (`SendAdmission.pieceBytes`).
    func pieceBytes(largest: Int) -> Int {
        let (window, segment) = steering.withLock { ($0.controller.window, $0.controller.segment) }
        return SendAdmission.pieceBytes(window: window, segment: segment, largest: largest)
    }

    /// Waits until the kernel holds little enough of the connection that `bytes` more stay within the window (at
    /// once when the kernel holds nothing or no connection is known yet); early when cancelled, or when the connection
    /// is closed.
    func admit(_ bytes: Int) async {
        while !Task.isCancelled {
            let (window, options) = steering.withLock { ($0.controller.window, $0.connection as? any SocketOptionProvider) }
            guard let options, let info = try? await TCPInfoReading.read(from: options),
                  let wait = steering.withLock({ $0.admission.wait(queued: info.held, adding: bytes, window: window) }) else { return }
            try? await Task.sleep(for: .seconds(wait))
        }
    }
}

extension YieldingConnection.Side {
    var isReceiving: Bool {
        if case .receiving = self { true } else { false }
    }
}

/// What the yielding needs of the kernel's `struct tcp_info` (linux/tcp.h), which Glibc's older copy lacks in part: the
/// receive-side round trip (`tcpi_rcv_rtt`, from TCP timestamps), the smoothed one of the ACKs (`tcpi_rtt`) and the
/// lowest one of the last minutes (`tcpi_min_rtt`, a moving minimum), in microseconds, the segment sizes, whether
/// timestamps are on, and what the kernel holds of a sending connection. The struct only ever grows at its end, so
/// the offsets are fixed; fields a kernel does not have read as 0.
struct TCPInfoReading {
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
    /// What the kernel holds of a sending connection (`SendAdmission.held`).
    var held: Int

    /// `tcp_info` up to and with `tcpi_bytes_retrans` (offset 208): 216 bytes.
    private typealias Prefix = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    static func read(from options: any SocketOptionProvider) async throws -> TCPInfoReading {
        let prefix: Prefix = try await options.unsafeGetSocketOption(level: .tcp, name: .tcp_info).get()
        return withUnsafeBytes(of: prefix) { raw in
            let sendSegment = raw.loadUnaligned(fromByteOffset: 16, as: UInt32.self)
            let acked = raw.loadUnaligned(fromByteOffset: 120, as: UInt64.self)
            let held = SendAdmission.held(sent: raw.loadUnaligned(fromByteOffset: 200, as: UInt64.self),
                                          retransmitted: raw.loadUnaligned(fromByteOffset: 208, as: UInt64.self),
                                          acknowledged: acked, unacknowledgedSegments: raw.loadUnaligned(fromByteOffset: 24, as: UInt32.self),
                                          segment: sendSegment, notSent: raw.loadUnaligned(fromByteOffset: 144, as: UInt32.self))
            return TCPInfoReading(receive: raw.loadUnaligned(fromByteOffset: 92, as: UInt32.self),
                                  smoothed: raw.loadUnaligned(fromByteOffset: 68, as: UInt32.self),
                                  minimum: raw.loadUnaligned(fromByteOffset: 148, as: UInt32.self),
                                  receiveSegment: raw.loadUnaligned(fromByteOffset: 20, as: UInt32.self),
                                  sendSegment: sendSegment, timestamps: raw[5] & 1 != 0, acked: acked, held: held)
        }
    }
}
