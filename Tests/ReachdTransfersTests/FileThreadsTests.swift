import Foundation
@testable import ReachdTransfers
import XCTest

/// The file threads grow while calls block (a hung file system), up to their bound, and shrink when idle.
final class FileThreadsTests: XCTestCase {
    func testABlockedCallHoldsOnlyItsOwnThread() async throws {
        let threads = FileThreads(maximum: 4, idleSeconds: 30)
        let release = DispatchSemaphore(value: 0)
        let blocked = Task { try await threads.run { release.wait(); return 1 } }
        let answered = try await threads.run { 2 }
        XCTAssertEqual(answered, 2, "answered beside the blocked call")
        release.signal()
        let first = try await blocked.value
        XCTAssertEqual(first, 1)
        threads.stop()
    }

    func testNoMoreThreadsThanTheBoundAndCallsPastItWaitForOne() async throws {
        let threads = FileThreads(maximum: 2, idleSeconds: 30)
        let release = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let calls = (1...3).map { n in Task { try await threads.run { started.signal(); release.wait(); return n } } }
        started.wait()
        started.wait()
        XCTAssertEqual(threads.threadCount, 2)
        // The third waits for a thread: it has not started while both are held.
        XCTAssertEqual(started.wait(timeout: .now() + 0.2), .timedOut, "only two calls run")
        for _ in 1...3 { release.signal() }
        var results: [Int] = []
        for call in calls { results.append(try await call.value) }
        XCTAssertEqual(results, [1, 2, 3])
        threads.stop()
    }

    func testIdleThreadsEndAndAStoppedPoolRefusesCalls() async throws {
        let threads = FileThreads(maximum: 4, idleSeconds: 0.05)
        _ = try await threads.run { 0 }
        try await eventually("the idle thread ended") { threads.threadCount == 0 }
        threads.stop()
        do {
            _ = try await threads.run { 0 }
            XCTFail("a stopped pool runs nothing")
        } catch {}
    }

    private func eventually(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(10)
        while !condition() {
            guard Date() < deadline else { return XCTFail("timed out: \(what)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
