import NIOCore
import NIOPosix
import XCTest
#if canImport(Glibc)
import Glibc
#endif
@testable import ReachdDaemon

/// Events go straight to a subscriber's socket while nothing waits in its channel's queue, and through the
/// queue otherwise: a subscriber whose socket was full still gets every line, in order.
final class SubscriberRegistrySocketTests: XCTestCase {
    private static func event(_ sequence: Int) -> SubscriberRegistry.Event {
        let line = "\(sequence) " + String(repeating: "x", count: 1500) + "\n"
        return .init(line: Array(line.utf8), key: "internet", sequence: UInt64(sequence))
    }

    func testASubscriberWhoseSocketWasFullGetsEveryLineInOrder() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends), 0)
        let client = ends[1]
        defer { close(client) }
        // A small send buffer fills after a few lines; the channel's queue may hold 16 MiB (never dropped here).
        var sendBuffer: Int32 = 4096
        setsockopt(ends[0], SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
        let channel = try ClientBootstrap(group: group)
            .channelOption(.writeBufferWaterMark, value: .init(low: 8 << 20, high: 16 << 20))
            .withConnectedSocket(ends[0]).wait()
        defer { try? channel.close().wait() }
        let registry = SubscriberRegistry(eventLoop: channel.eventLoop) { _ in }

        let sent = try channel.eventLoop.submit { () -> (count: Int, directly: Bool, queuedAtFull: Int, kept: [UInt8]) in
            registry.add(channel, key: "internet", sentSequence: 0)
            let directly = registry.writesDirectly(to: channel)
            var count = 0
            var queued = 0
            // Until the socket is full and the rest of a line waits in the channel's queue.
            while queued == 0, count < 10_000 {
                count += 1
                registry.broadcast([Self.event(count)])
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
                registry.broadcast([Self.event(count)])
            }
            return (count, directly, queued, kept)
        }.wait()
        XCTAssertTrue(sent.directly, "a socket channel's subscriber is written to directly")
        XCTAssertGreaterThan(sent.queuedAtFull, 0, "the socket filled and the queue held the rest")

        var received = sent.kept
        var lines = received.filter { $0 == 10 }.count
        var chunk = [UInt8](repeating: 0, count: 65536)
        while lines < sent.count {
            var entry = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 30_000) > 0 else { return XCTFail("only \(lines) of \(sent.count) lines within 30 s") }
            let n = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return XCTFail("the subscriber's connection closed") }
            received += chunk.prefix(n)
            lines += chunk.prefix(n).filter { $0 == 10 }.count
        }
        let sequences = received.split(separator: 10).map { Int(String(decoding: $0.prefix { $0 != 0x20 }, as: UTF8.self)) ?? -1 }
        XCTAssertEqual(sequences, Array(1...sent.count), "every line, in the order it was published")
    }
}
