import Synchronization
import XCTest
@testable import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

final class PollThreadTests: XCTestCase {
    /// A pipe whose read end the thread watches: a byte written makes `ready` see it readable.
    func testReadyReportsTheOwnersReadableDescriptor() throws {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        let readable = expectation(description: "the owner's descriptor is readable")
        let thread = try PollThread()
        let reported = Atomic<Bool>(false)
        try thread.start(descriptors: { ([pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)], -1) }, ready: { outcome in
            guard case .ready(let entries) = outcome, entries.count == 1, entries[0].revents & Int16(POLLIN) != 0 else { return }
            var byte: UInt8 = 0
            _ = read(fds[0], &byte, 1)
            if !reported.exchange(true, ordering: .relaxed) { readable.fulfill() }
        })
        var byte: UInt8 = 7
        XCTAssertEqual(write(fds[1], &byte, 1), 1)
        wait(for: [readable], timeout: 10)
        thread.stop()
    }

    /// `wake` ends the wait, so the thread asks for its descriptors again; after `stop` nothing runs.
    func testWakeAsksForTheDescriptorsAgainAndStopEndsTheThread() throws {
        let rounds = Atomic<Int>(0)
        let secondRound = expectation(description: "a second round after wake")
        let thread = try PollThread()
        try thread.start(descriptors: {
            if rounds.add(1, ordering: .relaxed).newValue == 2 { secondRound.fulfill() }
            return ([], -1)
        }, ready: { _ in })
        thread.wake()
        wait(for: [secondRound], timeout: 10)
        thread.stop()
        let afterStop = rounds.load(ordering: .relaxed)
        thread.wake()
        XCTAssertEqual(rounds.load(ordering: .relaxed), afterStop, "the thread was joined: no round after stop")
    }
}
