import NIOPosix
import ReachdServiceKit
import ReachdSystem
import XCTest

/// `Sleeper.eventLoops`: a sleep timed by an event loop's timer ends after its duration, and at once (throwing
/// `CancellationError`) when its task is cancelled, before or during the wait.
final class EventLoopSleeperTests: XCTestCase {
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    override func tearDown() {
        try? group.syncShutdownGracefully()
    }

    func testASleepLastsItsDuration() async throws {
        let sleeper = Sleeper.eventLoops(group)
        let started = ContinuousClock.now
        try await sleeper.sleep(for: .milliseconds(50))
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(50))
    }

    func testCancellingTheTaskEndsItsSleep() async throws {
        let sleeper = Sleeper.eventLoops(group)
        let asleep = expectation(description: "the loop's timer is armed")
        let sleeping = Task {
            asleep.fulfill()
            try await sleeper.sleep(for: .seconds(3600))
        }
        await fulfillment(of: [asleep], timeout: 30)
        sleeping.cancel()
        do {
            try await sleeping.value
            XCTFail("a cancelled sleep of an hour returned normally")
        } catch is CancellationError {
        }
    }

    func testASleepOfACancelledTaskThrowsAtOnce() async throws {
        let sleeper = Sleeper.eventLoops(group)
        let sleeping = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await sleeper.sleep(for: .seconds(3600))
        }
        do {
            try await sleeping.value
            XCTFail("a sleep of a cancelled task returned normally")
        } catch is CancellationError {
        }
    }
}
