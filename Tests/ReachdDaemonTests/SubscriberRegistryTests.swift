import NIOCore
import NIOConcurrencyHelpers
import NIOEmbedded
import NIOPosix
import XCTest
@testable import ReachdDaemon

/// Which subscriber gets which events as connections come and go (the registry keeps them in an array and
/// moves the last one into a gap).
final class SubscriberRegistryTests: XCTestCase {
    private func event(_ key: String, _ sequence: UInt64) -> SubscriberRegistry.Event {
        .init(line: Array("\(key)#\(sequence)\n".utf8), key: key, sequence: sequence)
    }

    private func lines(_ channel: EmbeddedChannel) throws -> [String] {
        var result: [String] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            result += String(decoding: buffer.readableBytesView, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        return result
    }

    func testRemovalsKeepEveryOtherSubscriberAndItsTargets() throws {
        let loop = EmbeddedEventLoop()
        let registry = SubscriberRegistry(eventLoop: loop) { _ in }
        let channels = (0..<4).map { _ in EmbeddedChannel(loop: loop) }
        for (index, channel) in channels.enumerated() {
            registry.add(channel, targets: [("internet", 1)], reply: ByteBuffer())
            if index.isMultiple(of: 2) { registry.add(channel, targets: [("host:a", 3)], reply: ByteBuffer()) }
        }
        registry.add(channels[1], targets: [("internet", 1)], reply: ByteBuffer())
        XCTAssertEqual(registry.count, 4, "a second subscribe of a connection adds no subscriber")

        registry.remove(channels[0])
        registry.remove(channels[0])
        XCTAssertEqual(registry.count, 3)
        registry.broadcast([event("internet", 2), event("host:a", 4), event("host:b", 9)], flushHere: true)
        XCTAssertEqual(try lines(channels[0]), [])
        XCTAssertEqual(try lines(channels[1]), ["internet#2"])
        XCTAssertEqual(try lines(channels[2]), ["internet#2", "host:a#4"])
        XCTAssertEqual(try lines(channels[3]), ["internet#2"])

        registry.remove(channels[3])
        registry.remove(channels[1])
        XCTAssertEqual(registry.count, 1)
        registry.broadcast([event("host:a", 4), event("internet", 3), event("host:a", 5)], flushHere: true)
        XCTAssertEqual(try lines(channels[2]), ["internet#3", "host:a#5"], "only what it has not seen, in batch order")
        XCTAssertEqual(try lines(channels[1]) + lines(channels[3]), [])

        registry.add(channels[3], targets: [("internet", 3)], reply: ByteBuffer())
        XCTAssertEqual(registry.count, 2)
        registry.broadcast([event("internet", 4)], flushHere: true)
        XCTAssertEqual(try lines(channels[2]), ["internet#4"])
        XCTAssertEqual(try lines(channels[3]), ["internet#4"])
    }

    /// A batch for many subscribers goes to the event loops one at a time (a loop starts it when the loop before has
    /// finished it), and each loop takes the batches in the order they came.
    func testABatchReachesTheLoopsInTurnAndEachLoopTheBatchesInOrder() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 3)
        defer { try? group.syncShutdownGracefully() }
        let loops = Array(group.makeIterator())
        let log = NIOLockedValueBox<[String]>([])
        let finished = DispatchSemaphore(value: 0)
        for batch in 0..<2 {
            SubscriberRegistry.inTurn(loops) { index in
                log.withLockedValue { $0.append("start \(batch) \(index)") }
                // Long enough for a loop started at the same time to log its start before this end (nothing waits for it).
                usleep(50_000)
                log.withLockedValue { $0.append("end \(batch) \(index)") }
                if index == loops.count - 1 { finished.signal() }
            }
        }
        for _ in 0..<2 { XCTAssertEqual(finished.wait(timeout: .now() + 30), .success) }
        let entries = log.withLockedValue { $0 }
        XCTAssertEqual(entries.count, 12)
        for batch in 0..<2 {
            for index in 1..<loops.count {
                let start = try XCTUnwrap(entries.firstIndex(of: "start \(batch) \(index)"))
                let endBefore = try XCTUnwrap(entries.firstIndex(of: "end \(batch) \(index - 1)"))
                XCTAssertGreaterThan(start, endBefore, "batch \(batch) reaches loop \(index) after loop \(index - 1): \(entries)")
            }
        }
        for index in loops.indices {
            let starts = entries.filter { $0.hasPrefix("start") && $0.hasSuffix(" \(index)") }
            XCTAssertEqual(starts, ["start 0 \(index)", "start 1 \(index)"], "loop \(index) takes the batches in order")
        }
    }
}
