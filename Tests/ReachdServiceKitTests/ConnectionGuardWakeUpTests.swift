import Foundation
import NIOCore
import NIOPosix
import ReachdServiceKit
import Synchronization
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The guard with the daemons' timers (`OffLoopTimers`) on a real event loop and a Unix socket: an idle
/// connection is closed, and once a connection has closed, nothing of it may wake the process again (an
/// idle daemon does not wake up). Wake-ups are counted as the voluntary context switches of the threads the
/// test started (each wait that ends and begins again adds one).
final class ConnectionGuardWakeUpTests: XCTestCase {
    private let path = "/tmp/reachd-guard-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"

    override func tearDown() {
        unlink(path)
    }

    /// A server whose connections each have a guard; `closed` is fulfilled when the first one closes.
    private func serve(on group: MultiThreadedEventLoopGroup, timeout: TimeAmount, timers: OffLoopTimers,
                       idle: IdleCalls, closed: XCTestExpectation) throws -> any Channel {
        try ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.closeFuture.whenComplete { _ in closed.fulfill() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ConnectionGuard(timeout: timeout, timers: timers) { idle.add() })
                }
            }
            .bind(unixDomainSocketPath: path).wait()
    }

    func testAClosedConnectionLeavesNothingToWakeFor() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loopThread = try XCTUnwrap(group.next().submit { ThreadWakeUps.current() }.wait())
        let before = ThreadWakeUps.threads()
        let timers = OffLoopTimers()
        let timersThread = ThreadWakeUps.threads().subtracting(before)
        XCTAssertEqual(timersThread.count, 1, "the timers' thread starts with them")
        let ours = timersThread.union([loopThread])
        let idle = IdleCalls()
        let closed = expectation(description: "the server closed the connection")
        let server = try serve(on: group, timeout: .seconds(1), timers: timers, idle: idle, closed: closed)
        defer { try? server.close().wait() }

        let client = try UnixClient(path: path)
        client.close()
        wait(for: [closed], timeout: 30)
        let settled = try XCTUnwrap(ThreadWakeUps.settled(ours), "the threads did not go back to sleep")
        // Proving that nothing happens takes waiting: 3 s is three times the guard's timeout, when the
        // timer of the closed connection would have fired. A loaded machine can only make a wake-up later.
        Thread.sleep(forTimeInterval: 3)
        XCTAssertEqual(ThreadWakeUps.count(ours), settled, "a thread woke up after the connection had closed")
        XCTAssertEqual(idle.value, 0)
    }

    func testAnIdleConnectionIsClosed() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let idle = IdleCalls()
        let closed = expectation(description: "the server closed the idle connection")
        let server = try serve(on: group, timeout: .milliseconds(200), timers: OffLoopTimers(), idle: idle, closed: closed)
        defer { try? server.close().wait() }
        let client = try UnixClient(path: path)
        defer { client.close() }
        wait(for: [closed], timeout: 30)
        XCTAssertEqual(idle.value, 1, "closed as idle, once")
    }
}

/// Idle closes counted from the guard's callback (on the event loop; read after it has closed the connection).
private final class IdleCalls: Sendable {
    private let calls = Mutex(0)
    var value: Int { calls.withLock { $0 } }
    func add() { calls.withLock { $0 += 1 } }
}

/// Voluntary context switches per thread of this process, from /proc.
enum ThreadWakeUps {
    /// The calling thread's id ("PID/task/TID" is where /proc/thread-self points).
    static func current() -> Int32? {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"))
            .flatMap { $0.split(separator: "/").last.flatMap { Int32($0) } }
    }

    static func threads() -> Set<Int32> {
        Set(((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap { Int32($0) })
    }

    /// Each thread's state letter and voluntary switches (nil for a thread that is gone).
    private static func status(_ tid: Int32) -> (state: String, switches: Int)? {
        guard let text = try? String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8) else { return nil }
        var state = "", switches = -1
        for line in text.split(separator: "\n") {
            let field = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard field.count == 2 else { continue }
            if field[0] == "State" { state = String(field[1].prefix(1)) }
            if field[0] == "voluntary_ctxt_switches" { switches = Int(field[1]) ?? -1 }
        }
        return (state, switches)
    }

    static func count(_ tids: Set<Int32>) -> [Int32: Int] {
        Dictionary(uniqueKeysWithValues: tids.map { ($0, status($0)?.switches ?? -1) })
    }

    /// The counts once every thread sleeps and two looks 100 ms apart agree (at most 10 s), else nil.
    static func settled(_ tids: Set<Int32>) -> [Int32: Int]? {
        var previous: [Int32: Int]?
        for _ in 0..<100 {
            let asleep = tids.allSatisfy { status($0)?.state == "S" }
            let now = count(tids)
            if asleep, now == previous { return now }
            previous = asleep ? now : nil
            usleep(100_000)
        }
        return nil
    }
}

/// A blocking Unix-socket client of plain system calls (no event loop of its own to wake).
struct UnixClient {
    let fd: Int32

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[i] = byte }
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else {
            let code = errno
            Glibc.close(fd)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
    }

    func close() { Glibc.close(fd) }
}
