import Logging
import ServiceLifecycle
import Synchronization
import XCTest
@testable import ReachdServiceKit
#if canImport(Glibc)
import Glibc
#endif

/// A daemon's parts in its service group: started together, stopped last added first, at the first signal, when a
/// part fails, or (without running) when a start-up step failed.
final class DaemonServicesTests: XCTestCase {
    /// What happened, in order.
    private final class Events: Sendable {
        private let list = Mutex<[String]>([])
        func record(_ event: String) { list.withLock { $0.append(event) } }
        var all: [String] { list.withLock { $0 } }
    }

    /// A fake component: records its stop.
    private struct Part: StartedComponent {
        let name: String
        let events: Events
        func stop() async { events.record("stop \(name)") }
    }

    /// Tells the test once the group runs its services.
    private struct Running: Service {
        let sink: AsyncStream<Void>.Continuation
        func run() async {
            sink.yield()
            try? await gracefulShutdown()
        }
    }

    private struct Failure: Error, Equatable {}

    /// Throws once the group runs.
    private struct Failing: Service {
        func run() async throws { throw Failure() }
    }

    private let logger = Logger(label: "test")

    func testTheFirstSignalStopsEveryPartLastAddedFirst() async throws {
        let events = Events()
        let (running, ran) = AsyncStream.makeStream(of: Void.self)
        var services = DaemonServices(logger: logger)
        for name in ["network", "socket", "metrics"] { services.add(started: Part(name: name, events: events)) }
        services.add(Running(sink: ran))
        let (signals, signal) = AsyncStream.makeStream(of: Int32.self)
        let group = Task { [services] in try await services.run(until: signals) }
        for await _ in running { break }
        XCTAssertEqual(events.all, [], "nothing stops before the signal")
        signal.yield(SIGTERM)
        try await group.value
        XCTAssertEqual(events.all, ["stop metrics", "stop socket", "stop network"])
    }

    func testAPartThatFailsStopsTheOthersAndItsErrorIsRethrown() async {
        let events = Events()
        var services = DaemonServices(logger: logger)
        services.add(started: Part(name: "network", events: events))
        services.add(Failing())
        services.add(started: Part(name: "socket", events: events))
        let (signals, _) = AsyncStream.makeStream(of: Int32.self)
        do {
            try await services.run(until: signals)
            XCTFail("the failure was not rethrown")
        } catch {
            XCTAssertEqual(error as? Failure, Failure())
        }
        XCTAssertEqual(events.all, ["stop socket", "stop network"])
    }

    func testAFailedStartStopsThePartsAddedSoFarWithoutASignal() async {
        let events = Events()
        var services = DaemonServices(logger: logger)
        services.add(started: Part(name: "network", events: events))
        services.add(started: Part(name: "socket", events: events))
        await services.shutDown()
        XCTAssertEqual(events.all, ["stop socket", "stop network"])
    }

    /// `sd_notify` to a socket of the test's own: READY=1 with the status once the group runs, watchdog pings while it
    /// runs, STOPPING=1 at the signal before any part stops.
    func testSystemdHearsReadyWatchdogAndStoppingBeforeThePartsStop() async throws {
        let notify = try NotifySocket()
        setenv("NOTIFY_SOCKET", notify.path, 1)
        setenv("WATCHDOG_USEC", "20000", 1)
        defer {
            unsetenv("NOTIFY_SOCKET")
            unsetenv("WATCHDOG_USEC")
        }
        /// The part reports its stop to the same socket, so that the socket holds the order of events.
        struct ReportingPart: StartedComponent {
            let notify: NotifySocket
            func stop() async { notify.send("stopped socket") }
        }
        var services = DaemonServices(logger: logger)
        services.add(started: ReportingPart(notify: notify))
        services.add(SystemdService(logger: logger) { "testing" })
        let (signals, signal) = AsyncStream.makeStream(of: Int32.self)
        let group = Task { [services] in try await services.run(until: signals) }
        XCTAssertEqual(notify.receive(), "READY=1\nSTATUS=testing")
        XCTAssertEqual(notify.receive(), "WATCHDOG=1")
        signal.yield(SIGTERM)
        try await group.value
        var after: [String] = []
        while let message = notify.receive(), message != "stopped socket" { after.append(message) }
        XCTAssertEqual(after.filter { $0 != "WATCHDOG=1" }, ["STOPPING=1"], "STOPPING=1 before the part stopped")
    }
}

/// A datagram socket in a temporary directory, where `sd_notify` sends when NOTIFY_SOCKET names it.
private final class NotifySocket: Sendable {
    let path: String
    private let fd: Int32

    init() throws {
        path = "/tmp/reachd-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let rc = Self.withAddress(path) { bind(fd, $0, $1) }
        guard fd >= 0, rc == 0 else { throw POSIXError(.EADDRNOTAVAIL) }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The next message, or nil after 5 s without one.
    func receive() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count >= 0 ? String(decoding: buffer.prefix(count), as: UTF8.self) : nil
    }

    func send(_ message: String) {
        let sender = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(sender) }
        _ = Self.withAddress(path) { address, length in
            Array(message.utf8).withUnsafeBytes { sendto(sender, $0.baseAddress, $0.count, 0, address, length) }
        }
    }

    private static func withAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8.prefix($0.count - 1)) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
