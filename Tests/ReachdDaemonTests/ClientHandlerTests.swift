import NIOCore
import NIOEmbedded
import ReachdModel
import ReachdMonitor
import ReachdProtocol
import XCTest
@testable import ReachdDaemon

/// The connection handler and subscriber fan-out on NIO's in-memory channel: no sockets, no kernel.
final class ClientHandlerTests: XCTestCase {
    private let wired = NetworkSnapshot(
        links: [LinkInfo(index: 2, name: "eth0", flags: [.up, .running, .lowerUp], carrier: true)],
        addresses: [InterfaceAddress(interfaceIndex: 2, address: IPAddress("192.0.2.2")!, prefixLength: 24)],
        defaultRoutes: [Route(family: .ipv4, nexthops: [Nexthop(interfaceIndex: 2, gateway: IPAddress("192.0.2.1"))])]
    )

    private func makeClient(hub: VerdictHub, loop: EmbeddedEventLoop, registry: SubscriberRegistry) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(ClientHandler(hub: hub, hosts: nil, registry: registry, logger: .init(label: "test")))
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/test.sock")).wait()
        return channel
    }

    private func replies(_ channel: EmbeddedChannel) throws -> [Reply] {
        var result: [Reply] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            for line in Array(buffer.readableBytesView).split(separator: UInt8(ascii: "\n")) {
                result.append(try Reply.decode(line: Array(line)))
            }
        }
        return result
    }

    func testAnswersRequestsAndErrorsWithoutDroppingTheClient() throws {
        let hub = VerdictHub(engine: InternetVerdict())
        hub.update(snapshot: wired)
        let loop = EmbeddedEventLoop()
        let registry = SubscriberRegistry(eventLoop: loop) { _ in }
        let client = try makeClient(hub: hub, loop: loop, registry: registry)
        let input = "{\"op\":\"ping\",\"id\":1}\nnot json\n{\"op\":\"nope\"}\n\(String(repeating: "x", count: maximumRequestLineLength + 1))\n{\"op\":\"status\",\"id\":2}\n"
        try client.writeInbound(ByteBuffer(string: input))
        let got = try replies(client)
        XCTAssertEqual(got.count, 5)
        XCTAssertEqual(got[0], .pong(id: .number(1)))
        guard case .error(let badJSON) = got[1], case .error(let unknown) = got[2], case .error(let tooLong) = got[3],
              case .status(let id, let verdict) = got[4] else {
            return XCTFail("unexpected replies \(got)")
        }
        XCTAssertEqual(badJSON.code, .badJSON)
        XCTAssertEqual(unknown.code, .unknownOp)
        XCTAssertEqual(tooLong.code, .lineTooLong)
        XCTAssertEqual(id, .number(2))
        XCTAssertEqual(verdict.verdict.status, .wired)
        XCTAssertTrue(client.isActive)
    }

    func testSubscribersGetEachChangeOnceAndSlowOnesAreDropped() throws {
        let hub = VerdictHub(engine: InternetVerdict())
        hub.update(snapshot: wired)
        let loop = EmbeddedEventLoop()
        let dropped = DropCounter()
        let registry = SubscriberRegistry(eventLoop: loop) { _ in dropped.increment() }
        let fast = try makeClient(hub: hub, loop: loop, registry: registry)
        let slow = try makeClient(hub: hub, loop: loop, registry: registry)
        for client in [fast, slow] {
            try client.writeInbound(ByteBuffer(string: "{\"op\":\"subscribe\"}\n"))
            guard case .subscribed(_, let verdicts)? = try replies(client).first, let verdict = verdicts.first else { return XCTFail("no subscribed reply") }
            XCTAssertEqual(verdict.sequence, 1)
        }
        XCTAssertEqual(registry.count, 2)

        let down = hub.update(snapshot: NetworkSnapshot())!
        registry.broadcast([.init(line: Reply.event(verdict: down).encodedLine(), key: "internet", sequence: down.sequence)], flushHere: true)
        registry.broadcast([.init(line: Reply.event(verdict: down).encodedLine(), key: "internet", sequence: down.sequence)], flushHere: true)
        XCTAssertEqual(try replies(fast), [.event(verdict: down)], "one event per change, even if broadcast twice")
        XCTAssertEqual(try replies(slow), [.event(verdict: down)])

        slow.isWritable = false
        let up = hub.update(snapshot: wired)!
        registry.broadcast([.init(line: Reply.event(verdict: up).encodedLine(), key: "internet", sequence: up.sequence)], flushHere: true)
        XCTAssertEqual(try replies(fast), [.event(verdict: up)])
        XCTAssertEqual(try replies(slow), [])
        XCTAssertFalse(slow.isActive, "a subscriber that does not read is closed")
        XCTAssertEqual(dropped.value, 1)
        XCTAssertEqual(registry.count, 1)
        XCTAssertTrue(fast.isActive)
    }

    func testHubPublishesOnlyChangesToObservers() {
        let hub = VerdictHub(engine: InternetVerdict())
        let seen = SequenceLog()
        _ = hub.addObserver { seen.append($0.sequence) }
        hub.update(snapshot: NetworkSnapshot())
        hub.update(snapshot: NetworkSnapshot())
        hub.update(snapshot: wired)
        hub.update(snapshot: wired)
        XCTAssertEqual(seen.values, [1, 2])
        XCTAssertEqual(hub.current?.verdict.status, .wired)
    }
}

private final class DropCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

private final class SequenceLog: @unchecked Sendable {
    private let lock = NSLock()
    private var log: [UInt64] = []
    func append(_ value: UInt64) { lock.withLock { log.append(value) } }
    var values: [UInt64] { lock.withLock { log } }
}
