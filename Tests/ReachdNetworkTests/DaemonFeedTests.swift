import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ReachdModel
@testable import ReachdNetwork
import ReachdProtocol
import ReachdTestSupport
import XCTest

/// The feed of reachd's word over its socket, against a fake reachd that answers one `subscribe` and goes
/// away when told.
final class DaemonFeedTests: XCTestCase {
    /// One connection: answers the first request line with `reply`, closes once `goAway` is called.
    private final class OneShotReachd: Sendable {
        private let listener: UnixListener
        var path: String { listener.path }
        private let leave = DispatchSemaphore(value: 0)

        init(path: String, reply: [UInt8]) throws {
            listener = try UnixListener(path: path)
            listener.answerOnce(with: reply, closingOn: leave)
        }

        func goAway() { leave.signal() }
    }

    /// reachd went away and the feed's connection closed; the app's next connection got the same number.
    /// Cancelling the feed must leave that connection alone (the feed kept the number and shut it down).
    func testCancelAfterReachdWentAwayLeavesTheAppsNextConnectionAlone() throws {
        let directory = try TestNetwork.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let verdict = InternetVerdict().verdict(for: TestNetwork.wired())
        let reply = Reply.subscribed(id: nil, verdicts: [StampedVerdict(verdict: verdict, sequence: 1, timestamp: Timestamp(microseconds: 0))])
        let reachd = try OneShotReachd(path: directory + "/reachd.sock", reply: reply.encodedLine())
        let words = Received<DaemonMetered?>()
        let feed = try XCTUnwrap(DaemonFeed.start(socket: reachd.path) { words.append($0) })
        XCTAssertEqual(words.all, [DaemonMetered(interface: "eth0", metered: false)])
        let descriptor = try XCTUnwrap(feed.openDescriptor)

        reachd.goAway()
        XCTAssertTrue(words.wait { $0.count == 2 }, "\(words.all)")
        XCTAssertEqual(words.all.last, .some(nil))
        // The reader closes its connection right after passing the end on: polled, nothing signals it.
        let deadline = Date().addingTimeInterval(30)
        while fcntl(descriptor, F_GETFD) != -1, Date() < deadline { usleep(10_000) }
        XCTAssertNil(feed.openDescriptor)

        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair), 0)
        defer { pair.forEach { close($0) } }
        try XCTSkipUnless(pair.contains(descriptor), "another thread took descriptor \(descriptor)")
        feed.cancel()
        let (mine, peer) = pair[0] == descriptor ? (pair[0], pair[1]) : (pair[1], pair[0])
        var byte: UInt8 = 42
        XCTAssertEqual(send(peer, &byte, 1, Int32(MSG_NOSIGNAL)), 1)
        byte = 0
        XCTAssertEqual(recv(mine, &byte, 1, Int32(MSG_DONTWAIT)), 1)
        XCTAssertEqual(byte, 42)
        XCTAssertEqual(send(mine, &byte, 1, Int32(MSG_NOSIGNAL)), 1, "the app's connection was shut down")
    }

    /// Cancelled while reachd is connected: the reader's blocking read ends and nothing more is passed on.
    func testCancelEndsAnOpenConnection() throws {
        let directory = try TestNetwork.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let verdict = InternetVerdict().verdict(for: TestNetwork.wired())
        let reply = Reply.subscribed(id: nil, verdicts: [StampedVerdict(verdict: verdict, sequence: 1, timestamp: Timestamp(microseconds: 0))])
        let reachd = try OneShotReachd(path: directory + "/reachd.sock", reply: reply.encodedLine())
        defer { reachd.goAway() }
        let words = Received<DaemonMetered?>()
        let feed = try XCTUnwrap(DaemonFeed.start(socket: reachd.path) { words.append($0) })
        let descriptor = try XCTUnwrap(feed.openDescriptor)
        feed.cancel()
        let deadline = Date().addingTimeInterval(30)
        while fcntl(descriptor, F_GETFD) != -1, Date() < deadline { usleep(10_000) }
        XCTAssertEqual(fcntl(descriptor, F_GETFD), -1, "the reader did not end")
        XCTAssertEqual(words.all, [DaemonMetered(interface: "eth0", metered: false)])
    }
}
