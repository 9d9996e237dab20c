@testable import ReachdNetwork
import XCTest

/// The descriptor `DaemonFeed.cancel` shuts down: only that of the connection the feed has open.
final class FeedSocketTests: XCTestCase {
    /// reachd went away and the feed's connection closed: its number may now be another connection of the
    /// app, which cancelling the feed must leave alone (the feed kept the number and shut it down).
    func testAfterTheConnectionClosedCancelShutsNothingDown() {
        var socket = FeedSocket()
        XCTAssertTrue(socket.opened(7))
        socket.closing()
        XCTAssertNil(socket.cancel())
        XCTAssertTrue(socket.cancelled)
    }

    func testCancelShutsDownTheOpenConnection() {
        var socket = FeedSocket()
        XCTAssertNil(socket.descriptor)
        XCTAssertTrue(socket.opened(7))
        XCTAssertEqual(socket.cancel(), 7)
    }

    /// Cancelled before the connection opened (`start` gave up waiting): it is not read, and its number is not kept.
    func testAConnectionOpenedAfterCancelIsNotTaken() {
        var socket = FeedSocket()
        XCTAssertNil(socket.cancel())
        XCTAssertFalse(socket.opened(7))
        XCTAssertNil(socket.descriptor)
        XCTAssertNil(socket.cancel())
    }
}
