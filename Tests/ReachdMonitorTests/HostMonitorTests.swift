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

    /// A network change returns at once: the hosts are judged again on another thread (the watcher publishes the
    /// internet verdict first and goes on), in slices, the user who watches fewest first: another user's 1,000 hosts
    /// do not hold back this user's one.
    func testANetworkChangeJudgesTheHostsElsewhereUsersInTurn() async throws {
        let refusal = Mutex(ENETUNREACH)
        let lookupThreads = Mutex<Set<UInt>>([])
        let resolver = HostResolver(threads: 1) { name in .addresses([IPAddress(name)!]) }
        let hosts = HostMonitor(judge: Configuration().hostJudge, refreshSeconds: 0, resolver: resolver, logger: Logger(label: "test")) { addresses in
            lookupThreads.withLock { _ = $0.insert(UInt(pthread_self())) }
            let errno = refusal.withLock { $0 }
            return addresses.map { _ in .refused(errno: errno) }
        }
        let many = (0..<1000).map { "10.0.\($0 / 250).\($0 % 250 + 1)" }
        _ = await hosts.watch(many, requester: .user(1000))
        _ = await hosts.watch(["192.0.2.9"], requester: .user(1001))
        let batches = Mutex<[[String]]>([])
        hosts.setObserverOfAllRequesters { _, published in batches.withLock { $0.append(published.map(\.verdict.target)) } }
        refusal.withLock { $0 = EACCES }
        lookupThreads.withLock { $0 = [] }
        let caller = UInt(pthread_self())
        hosts.networkChanged(NetworkSnapshot(), internetChanged: false)
        for _ in 0..<3000 where batches.withLock({ $0.joined().count }) < 1001 { try await Task.sleep(for: .milliseconds(10)) }
        let published = batches.withLock { $0 }
        XCTAssertEqual(published.joined().count, 1001, "every host changed once")
        XCTAssertEqual(published.first, ["192.0.2.9"], "the user with one host is judged first")
        XCTAssertEqual(published.count, 1 + 1000 / RejudgeOrder.sliceSize + 1, "a batch per slice")
        XCTAssertFalse(lookupThreads.withLock { $0 }.contains(caller), "judged on the caller's thread")
        hosts.stop()
        await resolver.shutdown()
    }

    /// A pass that read a host's addresses before the names were resolved again does not record its verdict over
    /// the one judged from the fresh addresses: the host stays at its new address.
    func testAResolutionThatCameDuringAPassIsNotOverwrittenByTheOlderOne() async throws {
        let old = IPAddress("192.0.2.1")!, new = IPAddress("192.0.2.2")!
        let answer = Mutex(old)
        let resolving = DispatchSemaphore(value: 0), judging = DispatchSemaphore(value: 0), held = DispatchSemaphore(value: 0)
        let holding = Mutex(false)
        let resolver = HostResolver(threads: 1) { _ in
            let address = answer.withLock { $0 }
            if address == new { resolving.wait() }
            return .addresses([address])
        }
        let hosts = HostMonitor(judge: Configuration().hostJudge, refreshSeconds: 0, resolver: resolver, logger: Logger(label: "test")) { addresses in
            if addresses == [old], holding.withLock({ $0 }) {
                held.signal()
                judging.wait()
            }
            return addresses.map { _ in .refused(errno: ENETUNREACH) }
        }
        _ = await hosts.watch(["mirror.test"])
        answer.withLock { $0 = new }
        holding.withLock { $0 = true }
        hosts.networkChanged(NetworkSnapshot(), internetChanged: true)
        // The pass holds the old addresses; the name's fresh answer comes and is judged meanwhile.
        XCTAssertEqual(held.wait(timeout: .now() + 30), .success, "the pass did not judge the old addresses")
        resolving.signal()
        for _ in 0..<3000 where hosts.currentVerdicts(of: ["mirror.test"])["mirror.test"]?.verdict.addresses != [new] {
            try await Task.sleep(for: .milliseconds(10))
        }
        XCTAssertEqual(hosts.currentVerdicts(of: ["mirror.test"])["mirror.test"]?.verdict.addresses, [new])
        judging.signal()
        for _ in 0..<3000 where hosts.state.withLock({ $0.rejudging }) { try await Task.sleep(for: .milliseconds(10)) }
        XCTAssertFalse(hosts.state.withLock { $0.rejudging }, "the pass did not end")
        XCTAssertEqual(hosts.currentVerdicts(of: ["mirror.test"])["mirror.test"]?.verdict.addresses, [new], "the older addresses' verdict was recorded over it")
        hosts.stop()
        await resolver.shutdown()
    }
}
