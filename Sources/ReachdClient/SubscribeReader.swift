import ReachdModel
import ReachdProtocol
import ReachdSystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// reachd's `subscribe` stream, read on a thread of its own: the one reader every client of the stream uses.
/// `open` connects, subscribes and hands the current verdicts on before it returns; the thread then hands on
/// every event, and when reachd goes away or refuses, does what `SubscribeMachine` says (end, or connect again).
/// `connect` is for an owner that sends its own requests on the connection (reachd-transfers, over several).
/// Once `stop` returned, nothing more is handed on.
public final class SubscribeReader: Sendable {
    /// What is handed on: verdicts, or why they stopped coming; for an owner of its requests (`connect`), each
    /// connection and the answers to its requests.
    public struct Handlers: Sendable {
        let verdicts: @Sendable ([StampedVerdict]) -> Void
        let unreachable: @Sendable (ClientError) -> Void
        var connected: (@Sendable (SubscribeReader) -> Void)?
        var replies: (@Sendable (Reply) -> Void)?

        /// `verdicts` gets the current verdicts, then each event's; `unreachable` why reachd's verdicts are not
        /// coming (once per outage).
        public init(verdicts: @escaping @Sendable ([StampedVerdict]) -> Void, unreachable: @escaping @Sendable (ClientError) -> Void) {
            self.verdicts = verdicts
            self.unreachable = unreachable
        }

        /// For `connect`: also `connected`, told of each connection opened (the owner subscribes what it needs on
        /// it), and `replies`, every answer that is not an event (to the owner's requests, matched by their ids).
        public init(verdicts: @escaping @Sendable ([StampedVerdict]) -> Void, unreachable: @escaping @Sendable (ClientError) -> Void,
                    connected: @escaping @Sendable (SubscribeReader) -> Void, replies: @escaping @Sendable (Reply) -> Void) {
            self.init(verdicts: verdicts, unreachable: unreachable)
            self.connected = connected
            self.replies = replies
        }
    }

    private let path: String
    private let daemon: ServingDaemon
    /// What is sent on each connection; nil for an owner that sends its own requests.
    private let request: Request?
    private let handlers: Handlers
    /// Held while an owner's request is sent, so that two are not interleaved.
    private let sending = Mutex(())
    /// The open connection's descriptor, and whether the reader was stopped.
    private let socket = Mutex(SubscriptionSocket())
    private let stopping = Atomic<Bool>(false)
    /// Held while something is handed on, so that nothing is once `stop` returned; the thread handing on, whose
    /// own `stop` (from a handler) must not wait for itself.
    private let handing = Mutex(())
    private let handingThread = Atomic<UInt>(0)
    /// Ends a retry wait early, and tells `waitUntilStopped` that the thread ended: a byte written to each stays
    /// unread, so every later wait on it returns at once.
    private let wake: Bell
    private let finished: Bell
    /// Why verdicts stopped coming (the last report; nil once they come again), for `waitUntilStopped`.
    private let lastReport = Mutex<ClientError?>(nil)

    private init(path: String, daemon: ServingDaemon, request: Request?, handlers: Handlers) throws(ClientError) {
        self.path = path
        self.daemon = daemon
        self.request = request
        self.handlers = handlers
        wake = try Bell(daemon)
        finished = try Bell(daemon)
    }

    /// Connects to the socket at `path` (where `daemon` listens, as errors name it), subscribes to `hosts` (none: the internet) and waits up to `timeout`
    /// seconds for the answer, whose verdicts go to `handlers` before this returns; then reads on a thread of its
    /// own. Throws when the first connection fails, whatever `retry` says (the caller decides whether to wait).
    public static func open(path: String, daemon: ServingDaemon = .reachd, hosts: [String] = [], retry: SubscribeRetry, timeout: Double,
                            handlers: Handlers) throws(ClientError) -> SubscribeReader {
        let reader = try SubscribeReader(path: path, daemon: daemon, request: Request(op: .subscribe, hosts: hosts), handlers: handlers)
        var machine = SubscribeMachine(retry: retry)
        _ = machine.handle(.start)
        let connection = try ReachdConnection(path: path, daemon: daemon)
        _ = reader.socket.withLock { $0.opened(connection.fileDescriptor) }
        _ = machine.handle(.connected)
        let first: [StampedVerdict]
        do {
            first = try connection.verdicts(for: Request(op: .subscribe, hosts: hosts), timeout: timeout)
        } catch {
            reader.socket.withLock { $0.closing() }
            throw error
        }
        _ = machine.handle(.verdicts)
        reader.hand { handlers.verdicts(first) }
        try reader.startThread(Handover(connection: connection, machine: machine, pending: []))
        return reader
    }

    /// Connects to the socket at `path` and subscribes to nothing: the owner sends its requests (`send`) and gets
    /// their answers through `handlers.replies`, the events through `handlers.verdicts`. `handlers.connected` is
    /// told of each connection (the first before this returns), `handlers.unreachable` of each one lost; connects
    /// again as `SubscribeRetry.backoff` says, a connection ending the outage. With `firstMustConnect`, throws when
    /// the first connection fails; else that one is tried on the reader's thread too.
    public static func connect(path: String, daemon: ServingDaemon = .reachd, firstMustConnect: Bool,
                               handlers: Handlers) throws(ClientError) -> SubscribeReader {
        let reader = try SubscribeReader(path: path, daemon: daemon, request: nil, handlers: handlers)
        var machine = SubscribeMachine(retry: .backoff, connectionEndsOutage: true)
        var pending = machine.handle(.start)
        var first: ReachdConnection?
        if firstMustConnect {
            let connection = try ReachdConnection(path: path, daemon: daemon)
            _ = reader.socket.withLock { $0.opened(connection.fileDescriptor) }
            pending = []
            if machine.handle(.connected).contains(.announceConnected) { reader.hand { handlers.connected?(reader) } }
            first = connection
        }
        try reader.startThread(Handover(connection: first, machine: machine, pending: pending))
        return reader
    }

    private func startThread(_ handed: Handover) throws(ClientError) {
        do {
            try DetachedThread.start { self.run(handed.take(), handed.machine, handed.pending) }
        } catch {
            socket.withLock { $0.closing() }
            throw ClientError(.io(call: error.call, errno: error.errno.rawValue), talkingTo: daemon)
        }
    }

    /// Sends `request` on the connection open now (for an owner of its requests); `.closed` when none is open,
    /// or it ends first.
    public func send(_ request: Request) throws(ClientError) {
        let bytes = request.encodedLine()
        try sending.withLock { _ throws(ClientError) in
            // A copy of the descriptor: the reader may close its own meanwhile; `stop` shuts the socket down.
            let fd = socket.withLock { $0.descriptor.map { fcntl($0, F_DUPFD_CLOEXEC, 0) } ?? -1 }
            guard fd >= 0 else { throw ClientError(.closed, talkingTo: daemon) }
            defer { close(fd) }
            do throws(SystemCallError) {
                try SystemCall.sendAll(bytes, on: fd)
            } catch {
                let gone = error.errno == Errno(EPIPE) || error.errno == Errno(ECONNRESET)
                throw ClientError(gone ? .closed : .io(call: error.call, errno: error.errno.rawValue), talkingTo: daemon)
            }
        }
    }

    /// The descriptor of the connection open now; nil between connections and once it closed.
    public var openDescriptor: Int32? { socket.withLock { $0.descriptor } }

    /// Stops reading: the open connection is shut down (its blocking read returns), a retry wait ends, and
    /// nothing more is handed on once this returned. The thread ends soon after.
    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        socket.withLock { socket in
            if let fd = socket.cancel() { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        }
        wake.ring()
        // A hand-over under way ends first, unless this is a handler stopping its own reader.
        if handingThread.load(ordering: .sequentiallyConsistent) != UInt(pthread_self()) { handing.withLock { _ in } }
    }

    /// Blocks until the reader's thread ended (reachd went away with `.never`, or `stop`); why verdicts had
    /// stopped coming, nil when they were coming.
    public func waitUntilStopped() -> ClientError? {
        finished.wait(milliseconds: -1)
        return lastReport.withLock { $0 }
    }

    // MARK: The thread

    /// Carries out the machine's actions; reads the connection while there are none.
    private func run(_ first: ReachdConnection?, _ start: SubscribeMachine, _ startActions: [SubscribeMachine.Action]) {
        var machine = start
        var connection: ReachdConnection? = first
        var pending = startActions
        var received: [StampedVerdict] = []
        func take(_ event: SubscribeMachine.Event) {
            pending += machine.handle(stopping.load(ordering: .sequentiallyConsistent) ? .stop : event)
        }
        func close() {
            guard connection != nil else { return }
            socket.withLock { $0.closing() }
            connection = nil
        }
        loop: while true {
            guard !pending.isEmpty else {
                guard let open = connection else { take(.stop); continue }
                do throws(ClientError) {
                    let reply = try open.nextReply()
                    switch reply {
                    case .event(let verdict)? where request == nil: received = [verdict]; take(.verdicts)
                    case let reply? where request == nil: hand { handlers.replies?(reply) }
                    case .subscribed(_, let verdicts)?: received = verdicts; take(.verdicts)
                    case .event(let verdict)?: received = [verdict]; take(.verdicts)
                    case .error(let error)?: take(.refused(open.failure(.refused(error))))
                    default: break  // a `pong` or `status` answer: not this stream's
                    }
                } catch {
                    take(.lost(error))
                }
                continue
            }
            switch pending.removeFirst() {
            case .connect:
                do throws(ClientError) {
                    let opened = try ReachdConnection(path: path, daemon: daemon)
                    guard socket.withLock({ $0.opened(opened.fileDescriptor) }) else { take(.stop); continue }
                    connection = opened
                    if let request { try opened.send(request) }
                    take(.connected)
                } catch {
                    close()
                    take(.lost(error))
                }
            case .wait(let milliseconds):
                close()
                wake.wait(milliseconds: Int32(milliseconds))
                take(.timerFired)
            case .reportUnreachable(let error):
                // Closed first: the owner's requests sent until now are lost, and no later one is sent on it.
                close()
                lastReport.withLock { $0 = error }
                hand { handlers.unreachable(error) }
            case .announceConnected:
                lastReport.withLock { $0 = nil }
                hand { handlers.connected?(self) }
            case .deliver:
                lastReport.withLock { $0 = nil }
                let verdicts = received
                received = []
                hand { handlers.verdicts(verdicts) }
            case .stop:
                close()
                break loop
            }
        }
        finished.ring()
    }

    /// Runs `body` unless the reader was stopped; `stop` waits for it.
    private func hand(_ body: () -> Void) {
        handing.withLock { _ in
            guard !stopping.load(ordering: .sequentiallyConsistent) else { return }
            handingThread.store(UInt(pthread_self()), ordering: .sequentiallyConsistent)
            defer { handingThread.store(0, ordering: .sequentiallyConsistent) }
            body()
        }
    }

    /// The first connection and the machine, handed to the thread that takes them over: the connection is
    /// taken out, so that it closes when the thread lets it go, not when the thread ends.
    private final class Handover: @unchecked Sendable {
        private var connection: ReachdConnection?
        let machine: SubscribeMachine
        /// The machine's actions not carried out yet.
        let pending: [SubscribeMachine.Action]

        init(connection: ReachdConnection?, machine: SubscribeMachine, pending: [SubscribeMachine.Action]) {
            self.connection = connection
            self.machine = machine
            self.pending = pending
        }

        /// The connection, once (only the thread calls this).
        func take() -> ReachdConnection? {
            defer { connection = nil }
            return connection
        }
    }
}

/// A pipe that rings once and stays rung: `wait` returns when it rang or when the time is up.
private struct Bell: ~Copyable, Sendable {
    private let readEnd: OwnedDescriptor
    private let writeEnd: OwnedDescriptor

    init(_ daemon: ServingDaemon) throws(ClientError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw ClientError(.io(call: "pipe", errno: errno), talkingTo: daemon) }
        readEnd = OwnedDescriptor(adopting: ends[0])
        writeEnd = OwnedDescriptor(adopting: ends[1])
        // Not inherited by a program the app starts (pipe2's O_CLOEXEC is not in Glibc's module).
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    }

    func ring() {
        var byte: UInt8 = 1
        _ = try? SystemCall.retrying("write") { write(writeEnd.raw, &byte, 1) }
    }

    /// Waits until the bell rang or `milliseconds` passed (-1: forever).
    func wait(milliseconds: Int32) {
        let deadline = MonotonicClock.seconds() + Double(milliseconds) / 1000
        // The milliseconds left, worked out again after an interrupted poll.
        func left() -> Int32 {
            milliseconds < 0 ? -1 : Int32(max(0, ((deadline - MonotonicClock.seconds()) * 1000).rounded(.up)))
        }
        var entry = pollfd(fd: readEnd.raw, events: Int16(POLLIN), revents: 0)
        _ = try? SystemCall.retrying("poll") { poll(&entry, 1, left()) }
    }
}

/// Which descriptor `SubscribeReader.stop` may shut down: only that of the connection the reader has open now.
/// A number the reader gave up belongs to whatever the process opens next (another connection of the app). Pure.
package struct SubscriptionSocket: Equatable {
    /// The open connection's descriptor.
    package private(set) var descriptor: Int32?
    package private(set) var cancelled = false

    package init() {}

    /// A connection opened on `fd`: false when the reader was stopped already (it is not read).
    package mutating func opened(_ fd: Int32) -> Bool {
        guard !cancelled else { return false }
        descriptor = fd
        return true
    }

    /// The connection is about to close: its number is no longer the reader's.
    package mutating func closing() {
        descriptor = nil
    }

    /// Stops the reader: the descriptor to shut down, if a connection is open.
    package mutating func cancel() -> Int32? {
        cancelled = true
        return descriptor
    }
}
