import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import XCTest
@testable import ReachdDaemon

/// malloc's free memory goes back every second while clients leave; the code pages only once a flood has left (no
/// close for a second), and at most every 30 s: a user who closes connections in bursts cannot keep reachd
/// unmapping and faulting in its code.
final class MemoryAfterDeparturesTests: XCTestCase {
    func testTheCodePagesGoOnlyOnceAFloodHasLeft() {
        let loop = EmbeddedEventLoop()
        let releases = NIOLockedValueBox<[Bool]>([])
        let memory = MemoryAfterDepartures(loop: loop) { codePagesToo in releases.withLockedValue { $0.append(codePagesToo) } }
        for _ in 0..<MemoryAfterDepartures.floodDepartures { memory.departed() }
        loop.advanceTime(by: .milliseconds(500))
        memory.departed()
        loop.advanceTime(by: .milliseconds(600))
        XCTAssertEqual(releases.withLockedValue { $0 }, [false], "a second after the first close: malloc's memory, while a close came 600 ms ago")
        loop.advanceTime(by: .seconds(1))
        XCTAssertEqual(releases.withLockedValue { $0 }, [false, true], "quiet for a second after the flood: the code pages too")
        loop.advanceTime(by: .seconds(5))
        XCTAssertEqual(releases.withLockedValue { $0 }.count, 2, "nothing more while nothing closes")
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
