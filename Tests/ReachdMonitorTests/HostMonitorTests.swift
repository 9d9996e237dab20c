import Logging
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
}
