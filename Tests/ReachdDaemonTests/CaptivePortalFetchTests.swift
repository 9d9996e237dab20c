import NIOCore
import NIOPosix
import ReachdModel
import ReachdMonitor
import Synchronization
import XCTest
@testable import ReachdDaemon

/// The captive-portal API query against local servers: the whole exchange ends by its deadline, and an
/// announcement that points at this host is never contacted.
final class CaptivePortalFetchTests: XCTestCase {
    private static let body = Array(#"{"captive": false}"#.utf8) + [UInt8](repeating: 0x20, count: 200)

    func testABodyTrickledPastTheDeadlineIsCutOff() async throws {
        // 218 bytes, one per 100 ms: about 22 s, well past the 1 s deadline; the read timeout never fires.
        let server = try await TricklingServer.start(body: Self.body, every: .milliseconds(100))
        let result = await CaptivePortalFetch.exchange(
            "http://127.0.0.1:\(server.port)/api", host: "127.0.0.1", address: IPAddress("127.0.0.1")!,
            group: MultiThreadedEventLoopGroup.singleton, deadline: .now() + .seconds(1)
        )
        try await server.close()
        guard case .failure(let why) = result else { return XCTFail("the trickled body was read to its end: \(result)") }
        XCTAssertEqual(why.description, "no complete answer before the deadline")
        XCTAssertGreaterThan(server.bytesSent, 0, "the answer's head came, the body had begun")
    }

    func testAnAnswerWithinTheDeadlineIsRead() async throws {
        let server = try await TricklingServer.start(body: Self.body, every: .milliseconds(1))
        let result = await CaptivePortalFetch.exchange(
            "http://127.0.0.1:\(server.port)/api", host: "127.0.0.1", address: IPAddress("127.0.0.1")!,
            group: MultiThreadedEventLoopGroup.singleton, deadline: .now() + .seconds(60)
        )
        try await server.close()
        XCTAssertEqual(try result.get(), CaptivePortalStatus(captive: false))
    }

    func testAnnouncementsPointingAtThisHostAreNotContacted() async throws {
        let server = try await TricklingServer.start(body: Self.body, every: .milliseconds(1))
        let resolver = HostResolver(threads: 1)
        let own: Set<IPAddress> = [IPAddress("192.0.2.77")!]
        for url in ["https://127.0.0.1:\(server.port)/api", "https://localhost:\(server.port)/api", "https://[::1]:\(server.port)/api",
                    "https://[::ffff:127.0.0.1]:\(server.port)/api", "https://192.0.2.77/api", "https://169.254.0.1/api"] {
            let result = await CaptivePortalFetch.status(of: url, ownAddresses: own, resolver: resolver, group: MultiThreadedEventLoopGroup.singleton)
            guard case .failure(let why) = result else { XCTFail("\(url) answered"); continue }
            XCTAssertTrue(why.refused, "\(url): \(why)")
            XCTAssertTrue(why.description.hasPrefix("refused: "), "\(url): \(why)")
        }
        await resolver.shutdown()
        try await server.close()
        XCTAssertEqual(server.connections, 0, "nothing connected to the local server")
    }
}

/// An HTTP server on 127.0.0.1 that answers every request `200` with `body`, one byte per `every`.
private final class TricklingServer: Sendable {
    private let channel: any Channel
    private let counters: Counters

    private final class Counters: Sendable {
        let connections = Atomic<Int>(0)
        let bytesSent = Atomic<Int>(0)
    }

    private init(channel: any Channel, counters: Counters) {
        self.channel = channel
        self.counters = counters
    }

    var port: Int { channel.localAddress?.port ?? 0 }
    var connections: Int { counters.connections.load(ordering: .relaxed) }
    var bytesSent: Int { counters.bytesSent.load(ordering: .relaxed) }

    static func start(body: [UInt8], every interval: TimeAmount) async throws -> TricklingServer {
        let counters = Counters()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                counters.connections.add(1, ordering: .relaxed)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Handler(body: body, interval: interval, counters: counters))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return TricklingServer(channel: channel, counters: counters)
    }

    func close() async throws { try await channel.close() }

    /// Answers the first bytes of a request: the head at once, then the body byte by byte.
    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        private let body: [UInt8]
        private let interval: TimeAmount
        private let counters: Counters
        private var answered = false

        init(body: [UInt8], interval: TimeAmount, counters: Counters) {
            self.body = body
            self.interval = interval
            self.counters = counters
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !answered else { return }
            answered = true
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/captive+json\r\nContent-Length: \(body.count)\r\n\r\n"
            context.channel.writeAndFlush(ByteBuffer(string: head), promise: nil)
            counters.bytesSent.add(head.utf8.count, ordering: .relaxed)
            Self.send(body, from: 0, every: interval, on: context.channel, counters: counters)
        }

        private static func send(_ body: [UInt8], from index: Int, every interval: TimeAmount, on channel: any Channel, counters: Counters) {
            guard index < body.count, channel.isActive else { return }
            channel.eventLoop.scheduleTask(in: interval) {
                channel.writeAndFlush(ByteBuffer(bytes: [body[index]]), promise: nil)
                counters.bytesSent.add(1, ordering: .relaxed)
                send(body, from: index + 1, every: interval, on: channel, counters: counters)
            }
        }
    }
}
