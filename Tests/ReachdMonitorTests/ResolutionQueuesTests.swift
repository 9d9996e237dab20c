import ReachdModel
import Synchronization
import XCTest
@testable import ReachdMonitor

/// The order name lookups start in (pure), and the resolver that follows it.
final class ResolutionQueuesTests: XCTestCase {
    private func drain(_ queues: inout ResolutionQueues) -> [String] {
        var started: [String] = []
        while let next = queues.next() { started.append(next.name) }
        return started
    }

    func testRequestersAreServedInTurnWhateverTheyQueued() {
        var queues = ResolutionQueues(runningPerRequester: 100)
        for index in 1...5 { queues.enqueue("slow\(index).b", for: .user(1001)) }
        queues.enqueue("victim.a", for: .user(1000))
        queues.enqueue("check.daemon", for: .daemon)
        XCTAssertEqual(drain(&queues), ["slow1.b", "victim.a", "check.daemon", "slow2.b", "slow3.b", "slow4.b", "slow5.b"])
    }

    func testARequesterAtItsRunningLimitLetsOthersStart() {
        var queues = ResolutionQueues(runningPerRequester: 2)
        for index in 1...40 { queues.enqueue("slow\(index).b", for: .user(1001)) }
        XCTAssertEqual(drain(&queues), ["slow1.b", "slow2.b"], "two of B's lookups run; the rest wait for them")
        queues.enqueue("victim.a", for: .user(1000))
        XCTAssertEqual(queues.next()?.name, "victim.a", "A starts while B's two hang")
        queues.finished("slow1.b")
        XCTAssertEqual(queues.next()?.name, "slow3.b")
        XCTAssertNil(queues.next())
    }

    func testANameAskedForByTwoRequestersStartsInTheFirstTurnAndOnce() {
        var queues = ResolutionQueues(runningPerRequester: 1)
        queues.enqueue("slow1.b", for: .user(1001))
        queues.enqueue("shared.test", for: .user(1001))
        queues.enqueue("shared.test", for: .user(1000))
        XCTAssertTrue(queues.isPending("shared.test"))
        XCTAssertEqual(queues.next()?.name, "slow1.b")
        XCTAssertEqual(queues.next().map { [$0.name: $0.requester] }, ["shared.test": .user(1000)], "A's turn starts it, not B's queue")
        XCTAssertNil(queues.next(), "it left B's queue too")
        XCTAssertEqual(queues.queuedCount, 0)
        queues.enqueue("shared.test", for: .daemon)
        XCTAssertEqual(queues.queuedCount, 0, "a running name is not queued again: its answer serves")
        queues.finished("shared.test")
        XCTAssertFalse(queues.isPending("shared.test"))
    }

    /// B's 40 names never answer (until the test lets them); A's name is resolved meanwhile. The resolver before
    /// this one ran every lookup in one queue on two threads, so A's waited behind all of B's.
    func testOneRequestersHangingNamesDoNotHoldAnothersLookup() async throws {
        let gate = Gate()
        let resolver = HostResolver(threads: 4, runningPerRequester: 2) { name in
            if name.hasSuffix(".b") { gate.wait() }
            return .addresses([IPAddress("192.0.2.1")!])
        }
        let hanging = Task {
            await withTaskGroup(of: Void.self) { group in
                for index in 1...40 { group.addTask { _ = await resolver.resolve("slow\(index).b", for: .user(1001)) } }
            }
        }
        try await waitUntil { gate.waiting == 2 }
        let daemon = await resolver.resolve("check.daemon", for: .daemon)
        let victim = await resolver.resolve("victim.a", for: .user(1000))
        XCTAssertEqual(victim, .addresses([IPAddress("192.0.2.1")!]))
        XCTAssertEqual(daemon, victim)
        XCTAssertEqual(gate.waiting, 2, "B holds no more threads than its share")
        gate.open()
        await hanging.value
        await resolver.shutdown()
    }

    private func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<3000 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        XCTAssertTrue(condition(), "condition not reached within 30 s")
    }
}

/// Holds lookups until opened, counting those that wait.
private final class Gate: Sendable {
    private let state = Mutex((open: false, waiting: 0))

    var waiting: Int { state.withLock { $0.waiting } }

    func wait() {
        state.withLock { $0.waiting += 1 }
        while !state.withLock({ $0.open }) { usleep(1000) }
        state.withLock { $0.waiting -= 1 }
    }

    func open() { state.withLock { $0.open = true } }
}
