import Dispatch
import Foundation
import Synchronization
import XCTest
@testable import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// How many times the interrupting signal reached the sending thread (a signal handler captures nothing).
private let interruptions = Atomic<Int>(0)

/// `SystemCall.sendAll`: every byte, in order, through short and interrupted sends; a closed peer is `EPIPE`.
final class SendAllTests: XCTestCase {
    /// What the reading thread shares with the sending one.
    private final class Exchange: Sendable {
        let received = Mutex<[UInt8]>([])
        let sending = Atomic<Bool>(true)
        let interruptedBeforeReading = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
    }

    /// A blocking Unix stream send returns short, or fails with EINTR, only when a signal stops it (a handler without
    /// SA_RESTART), so the reader interrupts the sender: first twice before it reads anything, each time once the
    /// sender is blocked in `sendto` (the first send then returns short, the next one, with nothing sent, EINTR), then
    /// after each read while the sender waits for room in a small buffer. Every byte must arrive, in order.
    func testEveryByteArrivesInOrderThroughShortAndInterruptedSends() throws {
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair), 0)
        let (sender, reader) = (pair[0], pair[1])
        var small: Int32 = 4096
        XCTAssertEqual(setsockopt(sender, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size)), 0)
        var state: UInt64 = 42
        let bytes = (0..<(1 << 20)).map { _ -> UInt8 in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }

        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in interruptions.add(1, ordering: .relaxed) }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        var previous = sigaction()
        XCTAssertEqual(sigaction(SIGUSR2, &action, &previous), 0)
        defer { sigaction(SIGUSR2, &previous, nil) }
        interruptions.store(0, ordering: .relaxed)

        let exchange = Exchange()
        let senderThread = pthread_self()
        // "PID/task/TID" is where /proc/thread-self points.
        let senderCall = "/proc/" + (try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) + "/syscall"
        let expected = bytes.count
        Thread.detachNewThread {
            // Twice: the sender blocked in sendto, interrupted, and its handler run (so that call ended).
            let twice = (1...2).allSatisfy { count in
                let stopped = { !exchange.sending.load(ordering: .acquiring) }
                guard Self.wait(until: { Self.isBlockedInSend(senderCall) || stopped() }), !stopped() else { return false }
                pthread_kill(senderThread, SIGUSR2)
                return Self.wait { interruptions.load(ordering: .relaxed) >= count }
            }
            exchange.interruptedBeforeReading.store(twice, ordering: .releasing)
            var chunk = [UInt8](repeating: 0, count: 16_384)
            var received: [UInt8] = []
            // Past `expected` a broken sender is sending again what it sent: stop, so that its next send fails.
            while received.count <= expected {
                let n = chunk.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                guard n > 0 else { break }
                received += chunk.prefix(n)
                if exchange.sending.load(ordering: .acquiring) { pthread_kill(senderThread, SIGUSR2) }
            }
            close(reader)
            exchange.received.withLock { $0 = received }
            exchange.done.signal()
        }
        let sent = Result { () throws(SystemCallError) in try SystemCall.sendAll(bytes, on: sender) }
        exchange.sending.store(false, ordering: .releasing)
        shutdown(sender, Int32(SHUT_WR))
        XCTAssertEqual(exchange.done.wait(timeout: .now() + 60), .success, "the reader saw the end")
        close(sender)

        XCTAssertNoThrow(try sent.get())
        let received = exchange.received.withLock { $0 }
        XCTAssertEqual(received.count, bytes.count)
        let firstDifference = zip(received, bytes).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        XCTAssertNil(firstDifference, "the bytes differ from byte \(firstDifference ?? 0) on")
        XCTAssertTrue(exchange.interruptedBeforeReading.load(ordering: .acquiring), "the sender was interrupted in sendto twice")
    }

    /// Whether the thread whose /proc syscall file is `path` is blocked in `sendto` (the file starts with its number).
    private static func isBlockedInSend(_ path: String) -> Bool {
        #if arch(x86_64)
        let sendto = 44
        #elseif arch(arm64)
        let sendto = 206
        #endif
        return (try? String(contentsOfFile: path, encoding: .utf8))?.hasPrefix("\(sendto) ") == true
    }

    /// Waits (up to 60 s: the machine may be loaded) until `condition` holds.
    private static func wait(until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(60)
        while !condition() {
            if Date() > deadline { return false }
            usleep(1_000)
        }
        return true
    }

    /// A peer that closed gives `send`'s EPIPE, and no SIGPIPE: without MSG_NOSIGNAL this test's process would die.
    func testAClosedPeerIsEPIPE() {
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair), 0)
        close(pair[1])
        defer { close(pair[0]) }
        XCTAssertThrowsError(try SystemCall.sendAll([1, 2, 3], on: pair[0])) { error in
            XCTAssertEqual(error as? SystemCallError, SystemCallError(call: "send", errno: Errno(EPIPE)))
        }
    }
}
