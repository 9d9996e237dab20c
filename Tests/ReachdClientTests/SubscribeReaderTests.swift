import Foundation
import ReachdClient
import ReachdModel
import ReachdProtocol
import ReachdTestSupport
import Synchronization
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The subscribe reader against a fake reachd: it hands the verdicts on, ends or connects again as
/// `SubscribeMachine` says when reachd goes away, and hands nothing on once stopped.
final class SubscribeReaderTests: XCTestCase {
    /// Answers each connection's first line with a `subscribed` reply (sequence: the connection's number, from 1);
    /// closes the connection at once when `keepOpen` says so for its number, else keeps it until the test ends.
    private final class FakeReachd: Sendable {
        private let listener: UnixListener
        var path: String { listener.path }
        /// The connections kept open, closed when the fake goes.
        private final class Held: Sendable { let fds = Mutex<[Int32]>([]) }
        private let held = Held()

        init(path: String, keepOpen: @escaping @Sendable (Int) -> Bool) throws {
            listener = try UnixListener(path: path, backlog: 8)
            let held = self.held
            listener.serve { client, number in
                UnixListener.skipLine(on: client)
                let reply = Reply.subscribed(id: nil, verdicts: [SubscribeReaderTests.verdict(sequence: UInt64(number))]).encodedLine()
                UnixListener.send(reply, on: client)
                if keepOpen(number) { held.fds.withLock { $0.append(client) } } else { close(client) }
                return true
            }
        }

        deinit {
            for fd in held.fds.withLock({ $0 }) { close(fd) }
        }
    }

    /// What the reader handed on, in order: a verdict's sequence, or -1 for a report.
    private final class Handed: Sendable {
        private let seen = Mutex<[Int64]>([])
        var all: [Int64] { seen.withLock { $0 } }

        var handlers: SubscribeReader.Handlers {
            SubscribeReader.Handlers(
                verdicts: { verdicts in self.seen.withLock { $0 += verdicts.map { Int64($0.sequence) } } },
                unreachable: { _ in self.seen.withLock { $0.append(-1) } }
            )
        }

        /// Waits (up to 30 s: the machine may be loaded) until `condition` holds.
        func wait(until condition: ([Int64]) -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(30)
            while !condition(all) {
                if Date() > deadline { return false }
                usleep(10_000)
            }
            return true
        }
    }

    static func verdict(sequence: UInt64) -> StampedVerdict {
        let none = FamilyVerdict.unreachable(.notJudged, "test")
        let verdict = Verdict(target: "internet", reachable: false, status: .unreachable, metered: false, meteredReason: nil, interface: nil,
                              flags: [], reason: "test", family: nil, ipv4: none, ipv6: none)
        return StampedVerdict(verdict: verdict, sequence: sequence, timestamp: Timestamp(microseconds: 0))
    }

    private func temporarySocket() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("subscribe-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        return directory + "/reachd.sock"
    }

    /// reachd closes the first two connections: each drop is reported once per outage and the reader connects
    /// again (0.1 s, then 0.2 s later), handing on each connection's verdicts.
    func testBackoffConnectsAgainAfterReachdWentAway() throws {
        let reachd = try FakeReachd(path: try temporarySocket()) { $0 >= 3 }
        let handed = Handed()
        let reader = try SubscribeReader.open(path: reachd.path, retry: .backoff, timeout: 30, handlers: handed.handlers)
        XCTAssertTrue(handed.wait { $0.contains(3) }, "\(handed.all)")
        XCTAssertEqual(handed.all, [1, -1, 2, -1, 3])
        XCTAssertNotNil(reader.openDescriptor)
        reader.stop()
        XCTAssertNil(reader.waitUntilStopped(), "verdicts were coming when it stopped")
        XCTAssertNil(reader.openDescriptor)
    }

    /// With `.never`, reachd's end is reported and ends the reader; `waitUntilStopped` says why.
    func testOneConnectionEndsWhenReachdGoesAway() throws {
        let reachd = try FakeReachd(path: try temporarySocket()) { _ in false }
        let handed = Handed()
        let reader = try SubscribeReader.open(path: reachd.path, retry: .never, timeout: 30, handlers: handed.handlers)
        XCTAssertEqual(reader.waitUntilStopped(), ClientError(.closed, talkingTo: .reachd))
        XCTAssertEqual(handed.all, [1, -1])
        XCTAssertNil(reader.openDescriptor)
    }

    /// No reachd: `open` throws whatever the retry rule (the caller decides whether to wait).
    func testOpenThrowsWithoutReachd() throws {
        let path = try temporarySocket()
        XCTAssertThrowsError(try SubscribeReader.open(path: path, retry: .backoff, timeout: 30, handlers: Handed().handlers)) { error in
            XCTAssertEqual(error as? ClientError, ClientError(.connect(path: path, errno: ENOENT), talkingTo: .reachd))
        }
    }

    /// Stopped while reachd comes and goes: nothing is handed on once `stop` returned, and the thread ends.
    func testNothingIsHandedOnAfterStop() throws {
        let reachd = try FakeReachd(path: try temporarySocket()) { _ in false }
        let handed = Handed()
        let reader = try SubscribeReader.open(path: reachd.path, retry: .backoff, timeout: 30, handlers: handed.handlers)
        XCTAssertTrue(handed.wait { $0.count >= 2 }, "\(handed.all)")
        reader.stop()
        let seen = handed.all
        _ = reader.waitUntilStopped()
        XCTAssertEqual(handed.all, seen, "handed on after stop returned")
    }

    /// An owner of its requests (`connect`, as reachd-transfers): it is told of the first connection before `connect`
    /// returns, its requests' answers come back as replies, and when reachd drops the connection it is told, and
    /// told again of the next connection (before any verdict), on which its requests go.
    func testAnOwnerSendsItsRequestsAndIsToldOfEachConnection() throws {
        let reachd = try FakeReachd(path: try temporarySocket()) { $0 >= 2 }
        let seen = Mutex<[String]>([])
        let handlers = SubscribeReader.Handlers(
            verdicts: { verdicts in seen.withLock { $0 += verdicts.map { "event \($0.sequence)" } } },
            unreachable: { _ in seen.withLock { $0.append("unreachable") } },
            connected: { _ in seen.withLock { $0.append("connected") } },
            replies: { reply in
                let line = if case .subscribed(_, let verdicts) = reply { "reply \(verdicts.map(\.sequence))" } else { "other" }
                seen.withLock { $0.append(line) }
            })
        let reader = try SubscribeReader.connect(path: reachd.path, firstMustConnect: true, handlers: handlers)
        XCTAssertEqual(seen.withLock { $0 }, ["connected"])
        // The fake answers the first line of each connection, then drops the first connection.
        try reader.send(Request(op: .subscribe, hosts: ["example.org"]))
        let deadline = Date().addingTimeInterval(30)
        while seen.withLock({ $0.count < 4 }), Date() < deadline { usleep(10_000) }
        XCTAssertEqual(seen.withLock { $0 }, ["connected", "reply [1]", "unreachable", "connected"])
        try reader.send(Request(op: .subscribe, hosts: ["example.org"]))
        while seen.withLock({ $0.count < 5 }), Date() < deadline { usleep(10_000) }
        XCTAssertEqual(seen.withLock { $0 }.last, "reply [2]")
        reader.stop()
        XCTAssertNil(reader.waitUntilStopped(), "connected when it stopped")
        XCTAssertThrowsError(try reader.send(Request(op: .subscribe, hosts: ["example.org"]))) { error in
            XCTAssertEqual(error as? ClientError, ClientError(.closed, talkingTo: .reachd))
        }
    }

    /// Without reachd, an owner that waits for it is told once, and `connect` does not throw.
    func testAnOwnerWaitingForReachdIsToldItIsAway() throws {
        let path = try temporarySocket()
        XCTAssertThrowsError(try SubscribeReader.connect(path: path, firstMustConnect: true, handlers: Handed().handlers))
        let handed = Handed()
        let reader = try SubscribeReader.connect(path: path, firstMustConnect: false, handlers: handed.handlers)
        XCTAssertTrue(handed.wait { $0 == [-1] }, "\(handed.all)")
        reader.stop()
        XCTAssertEqual(reader.waitUntilStopped(), ClientError(.connect(path: path, errno: ENOENT), talkingTo: .reachd))
    }
}
