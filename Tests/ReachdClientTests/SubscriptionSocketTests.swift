import ReachdClient
import XCTest

/// The descriptor `SubscribeReader.stop` shuts down: only that of the connection the reader has open.
final class SubscriptionSocketTests: XCTestCase {
    /// reachd went away and the reader's connection closed: its number may now be another connection of the
    /// app, which stopping the reader must leave alone (the reader kept the number and shut it down).
    func testAfterTheConnectionClosedCancelShutsNothingDown() {
        var socket = SubscriptionSocket()
        XCTAssertTrue(socket.opened(7))
        socket.closing()
        XCTAssertNil(socket.cancel())
        XCTAssertTrue(socket.cancelled)
    }

    func testCancelShutsDownTheOpenConnection() {
        var socket = SubscriptionSocket()
        XCTAssertNil(socket.descriptor)
        XCTAssertTrue(socket.opened(7))
        XCTAssertEqual(socket.cancel(), 7)
    }

    /// Cancelled before the connection opened (`start` gave up waiting): it is not read, and its number is not kept.
    func testAConnectionOpenedAfterCancelIsNotTaken() {
        var socket = SubscriptionSocket()
        XCTAssertNil(socket.cancel())
        XCTAssertFalse(socket.opened(7))
        XCTAssertNil(socket.descriptor)
        XCTAssertNil(socket.cancel())
    }
}
