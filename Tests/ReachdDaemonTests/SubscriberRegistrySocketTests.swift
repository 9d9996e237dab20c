import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ReachdTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif
@testable import ReachdDaemon

/// Events go straight to a subscriber's socket while nothing waits in its channel's queue, and through the
/// queue otherwise: a subscriber whose socket was full still gets every line, in order. A batch published off
/// the loop is written by the publisher's thread, through a descriptor of the registry's own, without the loop.
final class SubscriberRegistrySocketTests: XCTestCase {
    private static func event(_ sequence: Int) -> SubscriberRegistry.Event {
        let line = "\(sequence) " + String(repeating: "x", count: 1500) + "\n"
        return .init(line: Array(line.utf8), key: "internet", sequence: UInt64(sequence))
    }

    /// A line larger than the socket's buffer: the socket takes part of it.
    private static func largeEvent(_ sequence: Int) -> SubscriberRegistry.Event {
        let line = "\(sequence) " + String(repeating: "y", count: 20_000) + "\n"
        return .init(line: Array(line.utf8), key: "internet", sequence: UInt64(sequence))
    }

    /// Holds `loop` until `release` is signalled, then runs `then` there; returns once the loop is held.
    private func hold(_ loop: any EventLoop, until release: DispatchSemaphore, then: @escaping @Sendable () -> Void = {}) {
        let held = DispatchSemaphore(value: 0)
        loop.execute {
            held.signal()
            _ = release.wait(timeout: .now() + 60)
            then()
        }
        XCTAssertEqual(held.wait(timeout: .now() + 30), .success)
    }

    /// A subscriber as `subscribe` makes it, whose registry has a descriptor of its own for it.
    private func subscribedWithOwnDescriptor(sendBuffer: Int32) throws -> (channel: any Channel, client: Int32, registry: SubscriberRegistry) {
        let (channel, client) = try connected(sendBuffer: sendBuffer)
        let registry = SubscriberRegistry(eventLoop: channel.eventLoop) { _ in }
        XCTAssertTrue(try subscribe(channel, to: registry).fromPublisher, "the registry has a descriptor of its own")
        return (channel, client, registry)
    }

    /// The client's whole lines, read until `count` (30 s at most).
    private static func lines(from client: Int32, count: Int) -> [String] {
        SocketLines.read(count, from: client).map { String(decoding: $0, as: UTF8.self) }
    }

    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private var clients: [Int32] = []
    private var channels: [any Channel] = []
    /// Each channel's descriptor, as the socket server knows the ones it accepts.
    private var descriptors: [ObjectIdentifier: Int32] = [:]

    override func tearDown() {
        for channel in channels { try? channel.close().wait() }
        try? group.syncShutdownGracefully()
        for client in clients { close(client) }
    }

    /// A subscriber's channel on one end of a socket pair whose send buffer is `sendBuffer` bytes; the other end
    /// is the client's. The channel's queue may hold 16 MiB (never dropped here).
    private func connected(sendBuffer: Int32) throws -> (channel: any Channel, client: Int32) {
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends), 0)
        clients.append(ends[1])
        var size = sendBuffer
        setsockopt(ends[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let channel = try ClientBootstrap(group: group)
            .channelOption(.writeBufferWaterMark, value: .init(low: 8 << 20, high: 16 << 20))
            .withConnectedSocket(ends[0]).wait()
        channels.append(channel)
        descriptors[ObjectIdentifier(channel)] = ends[0]
        return (channel, ends[1])
    }

    /// Subscribes `channel` as the socket server does (a reply follows the subscription, the descriptor it accepted
    /// given) and says which descriptors events may be written to.
    private func subscribe(_ channel: any Channel, to registry: SubscriberRegistry) throws -> (fromLoop: Bool, fromPublisher: Bool) {
        let descriptor = try XCTUnwrap(descriptors[ObjectIdentifier(channel)])
        try channel.eventLoop.submit {
            registry.add(channel, descriptor: descriptor, targets: [("internet", 0)], reply: ByteBuffer())
        }.wait()
        return registry.writesDirectly(to: channel)
    }

    /// The client's lines' sequence numbers, read until `count` lines (30 s at most), with `kept` read before.
    private static func sequences(from client: Int32, count: Int, kept: [UInt8] = []) -> [Int] {
        SocketLines.bytes(count, from: client, after: kept).split(separator: 10)
            .map { Int(String(decoding: $0.prefix { $0 != 0x20 }, as: UTF8.self)) ?? -1 }
    }

    func testASubscriberWhoseSocketWasFullGetsEveryLineInOrder() throws {
        let (channel, client) = try connected(sendBuffer: 4096)
        defer { try? channel.close().wait() }
        let registry = SubscriberRegistry(eventLoop: channel.eventLoop) { _ in }
        XCTAssertTrue(try subscribe(channel, to: registry).fromLoop, "a socket channel's subscriber is written to directly")

        let sent = try channel.eventLoop.submit { () -> (count: Int, queuedAtFull: Int, kept: [UInt8]) in
            var count = 0
            var queued = 0
            // Until the socket is full and the rest of a line waits in the channel's queue.
            while queued == 0, count < 10_000 {
                count += 1
                registry.broadcast([Self.event(count)], flushHere: true)
                queued = (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
            }
            // The client reads some (here, on the loop, so the channel cannot flush its queue meanwhile): the
            // socket has room again, but the next lines must still go behind the ones that wait.
            var scratch = [UInt8](repeating: 0, count: 8192)
            var kept: [UInt8] = []
            while kept.count < 8192 {
                let n = scratch.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n <= 0 { break }
                kept += scratch.prefix(n)
            }
            for _ in 0..<5 {
                count += 1
                registry.broadcast([Self.event(count)], flushHere: true)
            }
            return (count, queued, kept)
        }.wait()
        XCTAssertGreaterThan(sent.queuedAtFull, 0, "the socket filled and the queue held the rest")
        XCTAssertEqual(Self.sequences(from: client, count: sent.count, kept: sent.kept), Array(1...sent.count),
                       "every line, in the order it was published")
    }

    /// The publisher's thread writes the batch itself: the line arrives while the loop is held up.
    func testABatchPublishedOffTheLoopReachesTheSocketWhileTheLoopIsBusy() throws {
        let (channel, client, registry) = try subscribedWithOwnDescriptor(sendBuffer: 65536)
        let release = DispatchSemaphore(value: 0)
        hold(channel.eventLoop, until: release)
        registry.broadcast([Self.event(1)])
        let received = Self.sequences(from: client, count: 1)
        release.signal()
        XCTAssertEqual(received, [1], "the line came while the loop was held")
    }

    /// Lines published off the loop faster than the client, reading all the while, takes them: what the socket
    /// does not take goes through the loop, and the lines after it wait for it there, even when the socket has
    /// room again; the client gets every line, in order.
    func testLinesPublishedOffTheLoopPastAFullSocketArriveInOrder() throws {
        let (channel, client, registry) = try subscribedWithOwnDescriptor(sendBuffer: 4096)
        let count = 2000
        let received = NIOLockedValueBox<[Int]>([]), done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            received.withLockedValue { $0 = Self.sequences(from: client, count: count) }
            done.signal()
        }
        // The loop is held while the lines are published, so that the socket has room again (the client reads on)
        // while the lines it did not take still wait for the loop.
        let release = DispatchSemaphore(value: 0)
        hold(channel.eventLoop, until: release)
        for sequence in 1...count { registry.broadcast([Self.event(sequence)]) }
        release.signal()
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(received.withLockedValue { $0 }, Array(1...count), "every line, in the order it was published")
    }

    /// A subscriber that leaves closes the registry's descriptor of its socket.
    func testRemovingASubscriberClosesTheRegistrysDescriptor() throws {
        let (channel, _, registry) = try subscribedWithOwnDescriptor(sendBuffer: 65536)
        let open = { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0 }
        let before = open()
        try channel.eventLoop.submit { registry.remove(channel) }.wait()
        XCTAssertEqual(open(), before - 1)
        XCTAssertEqual(registry.count, 0)
    }

    /// A reply written on the loop goes behind the lines the publisher left for the loop, the one it had half sent
    /// among them: every line arrives whole, then the reply.
    func testAReplyWaitsBehindTheLinesPendingForTheLoop() throws {
        let (channel, client, registry) = try subscribedWithOwnDescriptor(sendBuffer: 4096)
        let release = DispatchSemaphore(value: 0)
        hold(channel.eventLoop, until: release) {
            registry.writeThroughChannel(channel) { channel.writeAndFlush(ByteBuffer(string: "reply\n"), promise: nil) }
        }
        for sequence in 1...5 { registry.broadcast([Self.largeEvent(sequence)]) }
        release.signal()
        let lines = Self.lines(from: client, count: 6)
        XCTAssertEqual(lines.map { $0.prefix { $0 != " " } }, ["1", "2", "3", "4", "5", "reply"])
        XCTAssertEqual(lines.dropLast().map(\.utf8.count), Array(repeating: Self.largeEvent(1).line.count - 1, count: 5), "every line whole")
    }

    /// A batch published on the loop itself waits behind the lines another thread left for the loop, although the
    /// client has emptied the socket meanwhile.
    func testABatchPublishedOnTheLoopWaitsBehindLinesPendingThere() throws {
        let (channel, client, registry) = try subscribedWithOwnDescriptor(sendBuffer: 4096)
        let release = DispatchSemaphore(value: 0)
        hold(channel.eventLoop, until: release) { registry.broadcast([Self.largeEvent(6)]) }
        for sequence in 1...5 { registry.broadcast([Self.largeEvent(sequence)]) }
        let received = NIOLockedValueBox<[String]>([]), done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            received.withLockedValue { $0 = Self.lines(from: client, count: 6) }
            done.signal()
        }
        // The client reads what the socket took until the socket is empty; only then does the loop go on.
        var waiting: Int32 = 1
        for _ in 0..<3000 where waiting != 0 {
            usleep(10_000)
            _ = ioctl(client, UInt(FIONREAD), &waiting)
        }
        XCTAssertEqual(waiting, 0, "the client emptied the socket")
        release.signal()
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        let lines = received.withLockedValue { $0 }
        XCTAssertEqual(lines.map { $0.prefix { $0 != " " } }, ["1", "2", "3", "4", "5", "6"])
        XCTAssertEqual(lines.map(\.utf8.count), Array(repeating: Self.largeEvent(1).line.count - 1, count: 6), "every line whole")
    }

    /// The reply that subscribes a connection to a target comes before every event for that target published after
    /// the subscription, also one published off the loop while the loop is still at the subscription.
    func testTheSubscribingReplyComesBeforeLaterEvents() throws {
        let (channel, client, registry) = try subscribedWithOwnDescriptor(sendBuffer: 65536)
        try channel.eventLoop.submit {
            registry.add(channel, targets: [("host:a", 1)], reply: ByteBuffer(string: "reply\n"))
            let published = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                registry.broadcast([.init(line: Array("2 host:a\n".utf8), key: "host:a", sequence: 2)])
                published.signal()
            }
            XCTAssertEqual(published.wait(timeout: .now() + 30), .success)
        }.wait()
        XCTAssertEqual(Self.lines(from: client, count: 2).map { String($0.prefix { $0 != " " }) }, ["reply", "2"])
    }
}
