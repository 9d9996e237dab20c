import NIOCore
import NIOEmbedded
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
            registry.add(channel, key: "internet", sentSequence: 1)
            if index.isMultiple(of: 2) { registry.add(channel, key: "host:a", sentSequence: 3) }
        }
        registry.add(channels[1], key: "internet", sentSequence: 1)
        XCTAssertEqual(registry.count, 4, "a second subscribe of a connection adds no subscriber")

        registry.remove(channels[0])
        registry.remove(channels[0])
        XCTAssertEqual(registry.count, 3)
        registry.broadcast([event("internet", 2), event("host:a", 4), event("host:b", 9)])
        XCTAssertEqual(try lines(channels[0]), [])
        XCTAssertEqual(try lines(channels[1]), ["internet#2"])
        XCTAssertEqual(try lines(channels[2]), ["internet#2", "host:a#4"])
        XCTAssertEqual(try lines(channels[3]), ["internet#2"])

        registry.remove(channels[3])
        registry.remove(channels[1])
        XCTAssertEqual(registry.count, 1)
        registry.broadcast([event("host:a", 4), event("internet", 3), event("host:a", 5)])
        XCTAssertEqual(try lines(channels[2]), ["internet#3", "host:a#5"], "only what it has not seen, in batch order")
        XCTAssertEqual(try lines(channels[1]) + lines(channels[3]), [])

        registry.add(channels[3], key: "internet", sentSequence: 3)
        XCTAssertEqual(registry.count, 2)
        registry.broadcast([event("internet", 4)])
        XCTAssertEqual(try lines(channels[2]), ["internet#4"])
        XCTAssertEqual(try lines(channels[3]), ["internet#4"])
    }
}
