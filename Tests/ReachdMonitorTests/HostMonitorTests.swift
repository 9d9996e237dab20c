import Logging
import Synchronization
import ReachdConfig
import ReachdModel
import XCTest
@testable import ReachdMonitor

/// HostMonitor on this machine's kernel: an address literal needs no DNS, and the route to it is asked of the
/// kernel (rtnetlink), so these run wherever Linux does.
final class HostMonitorTests: XCTestCase {
    private func monitor(resolver: HostResolver) throws -> HostMonitor {
        let configuration = Configuration()
        return try HostMonitor(judge: configuration.hostJudge, refreshSeconds: 0, resolver: resolver, logger: Logger(label: "test"))
    }

    func testWatchingResolvingHereIsAWatchWithTheResolvedAddress() async throws {
        let resolver = HostResolver(threads: 1)
        let hosts = try monitor(resolver: resolver)
        let verdict = hosts.watchResolvingHere("127.0.0.1")
        XCTAssertEqual(verdict.verdict.target, "127.0.0.1")
        XCTAssertEqual(verdict.verdict.addresses, [IPAddress("127.0.0.1")!])
        XCTAssertEqual(verdict.sequence, 1)
        XCTAssertEqual(hosts.watchedCount, 1)
        hosts.unwatch(["127.0.0.1"])
        XCTAssertEqual(hosts.watchedCount, 0)
        await resolver.shutdown()
    }

    func testTheBlockingAndTheAsynchronousWatchJudgeAlike() async throws {
        let resolver = HostResolver(threads: 1)
        let hosts = try monitor(resolver: resolver)
        let blocking = hosts.watchResolvingHere("127.0.0.1")
        let asynchronous = await hosts.watch(["127.0.0.1"])
        XCTAssertEqual(asynchronous.map(\.verdict), [blocking.verdict])
        XCTAssertEqual(asynchronous.first?.sequence, 1, "the same verdict is not a change")
        XCTAssertEqual(hosts.watchedCount, 1, "one host, watched twice")
        await resolver.shutdown()
    }

    /// A route lookup the kernel left unanswered is not the kernel's word: the host keeps its last verdict (no
    /// event says "lookup failed") and is asked about again, and the answer then is published.
    func testAnUnansweredLookupKeepsTheLastVerdictAndIsAskedAgain() async throws {
        let address = IPAddress("192.0.2.7")!
        let answers = Mutex<[RouteDecision]>([.refused(errno: ENETUNREACH), .failed(errno: ETIMEDOUT), .refused(errno: EACCES)])
        let resolver = HostResolver(threads: 1) { _ in .addresses([address]) }
        let hosts = HostMonitor(judge: Configuration().hostJudge, refreshSeconds: 0, resolver: resolver, logger: Logger(label: "test")) { addresses in
            addresses.map { _ in answers.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] } }
        }
        let first = await hosts.watch(["mirror.test"])
        XCTAssertEqual(first.first?.verdict.reasonCode, .noRoute)
        let events = Mutex<[StampedVerdict]>([])
        hosts.setObserver { published in events.withLock { $0 += published } }

        hosts.networkChanged(NetworkSnapshot(), internetChanged: false)
        XCTAssertEqual(events.withLock { $0 }, [], "the unanswered lookup published nothing")
        for _ in 0..<3000 where events.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(10)) }
        let retried = try XCTUnwrap(events.withLock { $0.first }, "the host was not asked about again")
        XCTAssertEqual(retried.verdict.reasonCode, .rejectingRoute)
        XCTAssertEqual(retried.sequence, 2, "no verdict came between the first and the answer to the retry")
        hosts.stop()
        await resolver.shutdown()
    }
}
