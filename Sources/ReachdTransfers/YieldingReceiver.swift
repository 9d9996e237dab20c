import Logging
import NIOCore
import ReachdModel
import ReachdTransferModel
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A background download's receive side (`YieldController`): told the connection its clients open, it reads the
/// kernel's round-trip estimate (`TCP_INFO`) every 20 ms and narrows or widens the window the server may send into
/// (`TCP_WINDOW_CLAMP`, which shrinks an offered window from Linux 6.7 on), and paces reading to what that window lets
/// through per round trip (`RatePacer.yield`: a full receive buffer closes the window on any kernel), until the attempt
/// ends. Without TCP timestamps the kernel's receive estimate only ever falls: such a connection does not yield.
final class YieldingReceiver: Sendable {
    private let connection = Mutex<(any Channel)?>(nil)
    private let controller: Mutex<YieldController>
    private let logger: Logger
    private let job: String
    private let pacer: RatePacer

    init(job: String, pacer: RatePacer, logger: Logger) {
        self.job = job
        self.pacer = pacer
        self.logger = logger
        controller = Mutex(YieldController(maximum: Fetcher.receiveBufferBytes, now: MonotonicClock.seconds()))
    }

    /// A connection the attempt's clients opened (each request has its own: the latest is the one in use).
    func connected(_ channel: any Channel) {
        connection.withLock { $0 = channel }
    }

    /// Whether the download is held below what its buffer allows now.
    var isYielding: Bool { controller.withLock { $0.isYielding } }

    /// Samples and steers until the task is cancelled.
    func run() async {
        var applied: Int?
        var logged = 0.0
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(20))
            guard let channel = connection.withLock({ $0 }), let options = channel as? any SocketOptionProvider,
                  let info = try? await KernelRoundTrips.read(from: options), info.receive > 0, info.timestamps else { continue }
            let now = MonotonicClock.seconds()
            let rtt = Double(info.receive) / 1e6
            let (window, held) = controller.withLock { controller -> (Int, Bool) in
                controller.use(segment: Int(info.segment))
                _ = controller.sample(rtt: rtt, now: now, pathMinimum: info.minimum > 0 ? Double(info.minimum) / 1e6 : nil)
                return (controller.window, controller.window < controller.maximum)
            }
            pacer.yield(bytesPerSecond: held ? Int64(Double(window) / rtt) : nil)
            if now - logged >= 1 {
                logged = now
                let base = controller.withLock { $0.baseDelay } ?? 0
                logger.debug("job \(job): receive round trip \(info.receive) µs, base \(Int(base * 1e6)) µs, window \(window) B")
            }
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
}

/// What the yielding needs of the kernel's `struct tcp_info` (linux/tcp.h), which Glibc's older copy lacks in part: the
/// receive-side round trip (`tcpi_rcv_rtt`, from TCP timestamps) and the lowest one of the last minutes
/// (`tcpi_min_rtt`, a moving minimum), in microseconds, the receive MSS and whether timestamps are on. The struct only
/// ever grows at its end, so the offsets are fixed.
struct KernelRoundTrips {
    var receive: UInt32
    var minimum: UInt32
    /// `tcpi_rcv_mss`: the segments the server sends.
    var segment: UInt32
    /// `tcpi_options & TCPI_OPT_TIMESTAMPS`: the receive estimate comes from TCP timestamps.
    var timestamps: Bool

    /// `tcp_info` up to and with `tcpi_min_rtt` (offset 148): 152 bytes.
    private typealias Prefix = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    static func read(from options: any SocketOptionProvider) async throws -> KernelRoundTrips {
        let prefix: Prefix = try await options.unsafeGetSocketOption(level: .tcp, name: .tcp_info).get()
        return withUnsafeBytes(of: prefix) { raw in
            KernelRoundTrips(receive: raw.loadUnaligned(fromByteOffset: 92, as: UInt32.self),
                             minimum: raw.loadUnaligned(fromByteOffset: 148, as: UInt32.self),
                             segment: raw.loadUnaligned(fromByteOffset: 20, as: UInt32.self),
                             timestamps: raw[5] & 1 != 0)
        }
    }
}
