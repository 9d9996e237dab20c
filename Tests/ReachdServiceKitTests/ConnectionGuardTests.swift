import NIOCore
import NIOEmbedded
import ReachdServiceKit
import XCTest

/// The guard on NIO's in-memory channel, with NIO's timers (`EventLoopTimers`) on the embedded loop's clock: no
/// sockets, no waiting. `ConnectionGuardWakeUpTests` tries the daemons' timers on a real loop.
final class ConnectionGuardTests: XCTestCase {
    private func connected(_ loop: EmbeddedEventLoop, closes: IdleCount) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(ConnectionGuard(timeout: .seconds(15), timers: EventLoopTimers()) { closes.add() })
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/test.sock")).wait()
        return channel
    }

    func testAConnectionThatSendsNoCompleteRequestIsClosed() throws {
        let loop = EmbeddedEventLoop()
        let closes = IdleCount()
        let channel = try connected(loop, closes: closes)
        try channel.writeInbound(ByteBuffer(string: "{\"op\":\"sta"))
        loop.advanceTime(by: .seconds(14))
        XCTAssertTrue(channel.isActive, "closed before its time")
        loop.advanceTime(by: .seconds(1))
        XCTAssertFalse(channel.isActive, "half a line held the connection past the timeout")
        XCTAssertEqual(closes.value, 1)
    }

    func testTheClockRestartsAfterEachAnswerAndStopsWhileARequestRuns() throws {
        let loop = EmbeddedEventLoop()
        let channel = try connected(loop, closes: IdleCount())
        loop.advanceTime(by: .seconds(10))
        channel.pipeline.triggerUserOutboundEvent(ConnectionUse.requestStarted, promise: nil)
        loop.advanceTime(by: .seconds(60))
        XCTAssertTrue(channel.isActive, "a request in progress (a slow name lookup, a fetch) is not idleness")
        channel.pipeline.triggerUserOutboundEvent(ConnectionUse.requestAnswered, promise: nil)
        loop.advanceTime(by: .seconds(14))
        XCTAssertTrue(channel.isActive)
        loop.advanceTime(by: .seconds(1))
        XCTAssertFalse(channel.isActive)
    }

    func testASubscriberIsNeverIdle() throws {
        let loop = EmbeddedEventLoop()
        let channel = try connected(loop, closes: IdleCount())
        channel.pipeline.triggerUserOutboundEvent(ConnectionUse.requestStarted, promise: nil)
        channel.pipeline.triggerUserOutboundEvent(ConnectionUse.subscribed, promise: nil)
        channel.pipeline.triggerUserOutboundEvent(ConnectionUse.requestAnswered, promise: nil)
        loop.advanceTime(by: .hours(24 * 7))
        XCTAssertTrue(channel.isActive)
        _ = try channel.finish()
    }
}

/// Idle closes counted from the guard's callback.
private final class IdleCount: @unchecked Sendable {
    private(set) var value = 0
    func add() { value += 1 }
}
