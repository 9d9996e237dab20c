import Foundation
import ReachdClient
import ReachdModel
import ReachdProtocol
import ReachdTestSupport
import XCTest

/// The client takes the largest answer reachd sends: a `subscribe` of `Request.maximumHosts` long names, judged
/// through a link, is one line over 1 MiB (the old limit, which failed bench/run's 1,000 hosts); a line over the
/// limit is still refused as malformed.
final class ReplyLineLimitTests: XCTestCase {
    /// A host verdict as reachd judges one: a 253-character name, an IPv4 and an IPv6 address, routed out of eth0.
    private static func hostVerdict(_ number: Int) -> StampedVerdict {
        let name = String(repeating: "a", count: 240) + String(format: "%05d", number) + ".example"
        let v4 = IPAddress("198.18.0.5")!, v6 = IPAddress("2001:db8::5")!
        let snapshot = NetworkSnapshot(links: [LinkInfo(index: 2, name: "eth0", flags: [.up, .running, .lowerUp], carrier: true)])
        let route = RouteDecision.route(type: .unicast, interfaceIndex: 2, gateway: IPAddress("192.0.2.1"), source: IPAddress("192.0.2.2"))
        let verdict = HostVerdict().verdict(host: name, resolution: .addresses([v4, v6]), decisions: [v4: route, v6: route], in: snapshot)
        return StampedVerdict(verdict: verdict, sequence: UInt64(number), timestamp: Timestamp(microseconds: 1_700_000_000_000_000))
    }

    /// Serves one connection: reads the request line, answers `reply`, keeps the connection until the test ends.
    private func serve(_ reply: [UInt8]) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reply-limit-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let listener = try UnixListener(path: directory + "/reachd.sock")
        let served = DispatchSemaphore(value: 0)
        listener.answerOnce(with: reply, closingOn: served)
        addTeardownBlock {
            served.signal()
            withExtendedLifetime(listener) {}
            try? FileManager.default.removeItem(atPath: directory)
        }
        return listener.path
    }

    func testTheAnswerForTheMostHostsIsTaken() throws {
        let verdicts = (1...Request.maximumHosts).map(Self.hostVerdict)
        let reply = Reply.subscribed(id: nil, verdicts: verdicts).encodedLine()
        XCTAssertGreaterThan(reply.count, 1 << 20, "the answer must be over the old 1 MiB limit for this test to mean anything")
        XCTAssertLessThanOrEqual(reply.count, ReachdConnection.maximumReplyLineLength)
        let connection = try ReachdConnection(path: try serve(reply))
        let answered = try connection.verdicts(for: Request(op: .subscribe, hosts: verdicts.map(\.verdict.target)), timeout: 60)
        XCTAssertEqual(answered.map(\.verdict.target), verdicts.map(\.verdict.target))
    }

    func testALineOverTheLimitIsMalformed() throws {
        let reply = Array(repeating: UInt8(ascii: "x"), count: ReachdConnection.maximumReplyLineLength + 1) + [UInt8(ascii: "\n")]
        let connection = try ReachdConnection(path: try serve(reply))
        XCTAssertThrowsError(try connection.verdicts(for: Request(op: .ping), timeout: 60)) { error in
            guard let error = error as? ClientError, case .malformedReply = error.failure else { return XCTFail("\(error)") }
        }
    }
}
