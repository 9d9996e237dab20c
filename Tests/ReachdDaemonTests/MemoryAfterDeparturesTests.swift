import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import XCTest
@testable import ReachdDaemon

/// Memory goes back a second after the last of a burst of closes, the code pages only after a flood, and at most
/// every 30 s: a user who closes connections in bursts cannot keep reachd unmapping and faulting in its code.
final class MemoryAfterDeparturesTests: XCTestCase {
    func testMemoryGoesBackOnceTheClosesHaveStoppedForASecond() {
        let loop = EmbeddedEventLoop()
        let releases = NIOLockedValueBox<[Bool]>([])
        let memory = MemoryAfterDepartures(loop: loop) { codePagesToo in releases.withLockedValue { $0.append(codePagesToo) } }
        memory.departed()
        loop.advanceTime(by: .milliseconds(500))
        memory.departed()
        loop.advanceTime(by: .milliseconds(600))
        XCTAssertEqual(releases.withLockedValue { $0 }, [], "a close 600 ms ago: not quiet yet")
        loop.advanceTime(by: .milliseconds(400))
        XCTAssertEqual(releases.withLockedValue { $0 }, [false], "quiet for a second: malloc's free memory, no code pages for 2 closes")
        loop.advanceTime(by: .seconds(5))
        XCTAssertEqual(releases.withLockedValue { $0 }.count, 1, "nothing more while nothing closes")
    }

    func testAFloodUnmapsTheCodePagesAtMostEveryThirtySeconds() {
        let loop = EmbeddedEventLoop()
        let releases = NIOLockedValueBox<[Bool]>([])
        let memory = MemoryAfterDepartures(loop: loop) { codePagesToo in releases.withLockedValue { $0.append(codePagesToo) } }
        func flood() {
            for _ in 0..<MemoryAfterDepartures.floodDepartures { memory.departed() }
            loop.advanceTime(by: .seconds(1))
        }
        flood()
        XCTAssertEqual(releases.withLockedValue { $0 }, [true])
        loop.advanceTime(by: .seconds(2))
        flood()
        XCTAssertEqual(releases.withLockedValue { $0 }, [true, false], "a second flood 3 s later: malloc only")
        loop.advanceTime(by: .seconds(MemoryAfterDepartures.unmapIntervalSeconds))
        flood()
        XCTAssertEqual(releases.withLockedValue { $0 }, [true, false, true])
    }
}
