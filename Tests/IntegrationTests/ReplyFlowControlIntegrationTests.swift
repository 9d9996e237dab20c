import Foundation
import ReachdClient
import ReachdProtocol
import XCTest

/// Replies larger than a connection's queue limit (256 KiB): a client that reads them all gets them all, however
/// many it asked for at once; reachd stops reading its requests meanwhile instead of closing it. A client that
/// stops reading is still closed.
final class ReplyFlowControlIntegrationTests: XCTestCase {
    private var lab: NetLab!

    override func setUpWithError() throws {
        lab = try NetLab.make()
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.startDaemon()
    }

    override func tearDown() { lab?.tearDown() }

    /// `count` (at most 8) subscribe lines of 512 IPv4 literals each, all different (198.18.0.0/15, never contacted:
    /// a verdict asks the kernel's route, it sends nothing), for connection `connection` (at most 15).
    private static func subscribes(_ count: Int, connection: Int) -> [UInt8] {
        var text = ""
        for request in 0..<count {
            let hosts = (0..<512).map { "\"198.18.\(connection * 16 + request * 2 + $0 / 256).\($0 % 256)\"" }
            text += "{\"op\":\"subscribe\",\"id\":\(request),\"hosts\":[\(hosts.joined(separator: ","))]}\n"
        }
        return Array(text.utf8)
    }

    func testPipelinedLargeSubscribesAllReachAReadingClient() throws {
        let connections = 8, perConnection = 8
        let answered = Counts(), path = lab.socketPath
        DispatchQueue.concurrentPerform(iterations: connections) { index in
            do {
                let client = try ReachdConnection(path: path)
                try client.send(raw: Self.subscribes(perConnection, connection: index))
                for _ in 0..<perConnection {
                    guard case .subscribed(_, let verdicts)? = try client.nextReply(timeout: 60) else { return }
                    answered.add(verdicts.count)
                }
            } catch {
                answered.fail("connection \(index): \(error)")
            }
        }
        XCTAssertEqual(answered.errors, [], lab.log.suffix(2000).description)
        XCTAssertEqual(answered.replies, connections * perConnection, "replies")
        XCTAssertFalse(lab.log.contains("does not read its replies"), lab.log.suffix(2000).description)
    }

    func testAClientThatStopsReadingIsClosed() throws {
        let client = try ReachdConnection(path: lab.socketPath)
        try client.send(raw: Self.subscribes(8, connection: 0))
        try eventually("the client that does not read to be closed", timeout: 60, detail: lab.log.suffix(2000).description) {
            lab.log.contains("client does not read its replies; closing it")
        }
        XCTAssertEqual(try lab.reachctl(["ping"]).out, "pong\n", "others are served")
    }
}

/// What the reading clients got, from several threads.
private final class Counts: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var replies = 0
    private(set) var hosts = 0
    private(set) var errors: [String] = []

    func add(_ count: Int) { lock.withLock { replies += 1; hosts += count } }

    func fail(_ error: String) { lock.withLock { errors.append(error) } }
}
