import ReachdModel
import ReachdMonitor
import Synchronization
import XCTest

/// What the hub publishes for a change of the captive portal's counters, and how a follower starts.
final class VerdictHubTests: XCTestCase {
    private static let api = "https://portal.test/api"

    /// wlan0 up with a default route, announcing `api`, which answered `status`.
    private func snapshot(_ status: CaptivePortalStatus?, route: Bool = true) -> NetworkSnapshot {
        var snapshot = NetworkSnapshot(
            links: [LinkInfo(index: 2, name: "wlan0", flags: [.up, .running, .lowerUp], carrier: true, hardwareType: LinkInfo.arpEther)],
            addresses: [InterfaceAddress(interfaceIndex: 2, address: IPAddress("192.0.2.2")!, prefixLength: 24)],
            defaultRoutes: route ? [Route(family: .ipv4, type: .unicast, metric: 0,
                                          nexthops: [Nexthop(interfaceIndex: 2, gateway: IPAddress("192.0.2.1"))])] : [])
        snapshot.networkd = [2: NetworkdLinkFacts(captivePortal: Self.api)]
        if let status { snapshot.portalStatus = [Self.api: status] }
        return snapshot
    }

    func testACounterOnlyChangeIsNoNetworkChangeButReachesRefreshObservers() throws {
        let hub = VerdictHub(engine: InternetVerdict())
        let changes = Mutex<[StampedVerdict]>([]), refreshes = Mutex<[StampedVerdict]>([])
        _ = hub.addObserver { stamped in changes.withLock { $0.append(stamped) } }
        _ = hub.addObserver(refreshes: true) { stamped in refreshes.withLock { $0.append(stamped) } }
        let first = try XCTUnwrap(hub.update(snapshot: snapshot(CaptivePortalStatus(captive: false, secondsRemaining: 40))))

        XCTAssertNil(hub.update(snapshot: snapshot(CaptivePortalStatus(captive: false, secondsRemaining: 35))),
                     "NetworkView tells HostMonitor internetChanged only for a returned change")
        XCTAssertEqual(changes.withLock { $0.map(\.sequence) }, [1])
        XCTAssertEqual(refreshes.withLock { $0.map(\.sequence) }, [1, 1])
        XCTAssertEqual(refreshes.withLock { $0.last?.verdict.captivePortal?.status?.secondsRemaining }, 35)
        XCTAssertEqual(hub.current?.sequence, first.sequence)
        XCTAssertEqual(hub.current?.verdict.captivePortal?.status?.secondsRemaining, 35, "status and D-Bus read the new counters")

        XCTAssertEqual(hub.update(snapshot: snapshot(CaptivePortalStatus(captive: true)))?.sequence, 2, "captive again: a change")
        XCTAssertEqual(changes.withLock { $0.map(\.sequence) }, [1, 2])
    }

    func testAnObserverStartingWithCurrentGetsItFirstThenEveryChangeInOrder() {
        let hub = VerdictHub(engine: InternetVerdict())
        hub.update(snapshot: snapshot(nil, route: false))
        hub.update(snapshot: snapshot(nil))
        let seen = Mutex<[UInt64]>([])
        _ = hub.addObserver(startingWithCurrent: true) { stamped in seen.withLock { $0.append(stamped.sequence) } }
        XCTAssertEqual(seen.withLock { $0 }, [2], "the current verdict, at once")
        hub.update(snapshot: snapshot(nil, route: false))
        XCTAssertEqual(seen.withLock { $0 }, [2, 3])

        let fresh = VerdictHub(engine: InternetVerdict())
        let none = Mutex<[UInt64]>([])
        _ = fresh.addObserver(startingWithCurrent: true) { stamped in none.withLock { $0.append(stamped.sequence) } }
        XCTAssertEqual(none.withLock { $0 }, [], "no verdict yet: nothing until the first")
        fresh.update(snapshot: snapshot(nil))
        XCTAssertEqual(none.withLock { $0 }, [1])
    }

    /// reachd's socket adds its observer first: it is told first, before the D-Bus service and the others,
    /// whatever their number (the hub once kept them in a dictionary, in its hash order).
    func testObserversAreToldInTheOrderTheyWereAddedAndARemovedOneNoMore() {
        let hub = VerdictHub(engine: InternetVerdict())
        let told = Mutex<[Int]>([])
        let ids = (0..<20).map { number in hub.addObserver { _ in told.withLock { $0.append(number) } } }
        hub.update(snapshot: snapshot(nil))
        XCTAssertEqual(told.withLock { $0 }, Array(0..<20))

        hub.removeObserver(ids[3])
        told.withLock { $0 = [] }
        hub.update(snapshot: snapshot(nil, route: false))
        XCTAssertEqual(told.withLock { $0 }, Array(0..<20).filter { $0 != 3 })
    }

    func testObserversAddedFirstAreToldBeforeTheOthersInTheirOwnOrder() {
        let hub = VerdictHub(engine: InternetVerdict())
        let told = Mutex<[String]>([])
        for name in ["a", "B", "c", "D"] {
            let first = name.uppercased() == name
            _ = hub.addObserver(first: first) { _ in told.withLock { $0.append(name) } }
        }
        hub.update(snapshot: snapshot(nil))
        XCTAssertEqual(told.withLock { $0 }, ["B", "D", "a", "c"])
    }

    /// Followers start while verdicts keep changing on another thread: each sees strictly increasing sequences,
    /// none twice, none missing, ending at the last.
    func testFollowersStartingDuringChangesNeverSeeAnOlderVerdict() async {
        let hub = VerdictHub(engine: InternetVerdict())
        hub.update(snapshot: snapshot(nil))
        let up = snapshot(nil), down = snapshot(nil, route: false)
        let registering = SequenceLog()
        let changer = Task.detached {
            var round = 0
            while registering.sequences.withLock({ $0.isEmpty }) {
                hub.update(snapshot: round % 2 == 0 ? down : up)
                round += 1
            }
        }
        let logs = await Task.detached {
            let logs = (0..<300).map { _ in SequenceLog() }
            for log in logs {
                let before = hub.current?.sequence ?? 0
                _ = hub.addObserver(startingWithCurrent: true) { stamped in log.sequences.withLock { $0.append(stamped.sequence) } }
                while hub.current?.sequence ?? 0 < before + 2 {}  // the next registration comes while changes go on
            }
            registering.sequences.withLock { $0.append(1) }
            return logs
        }.value
        await changer.value
        let last = hub.current?.sequence
        for log in logs {
            let sequences = log.sequences.withLock { $0 }
            XCTAssertEqual(sequences, sequences.sorted(), "in order")
            XCTAssertEqual(Set(sequences).count, sequences.count, "each once")
            XCTAssertEqual(sequences.last, last, "ends at the current verdict")
            if let first = sequences.first, let lastSeen = sequences.last {
                XCTAssertEqual(sequences.count, Int(lastSeen - first) + 1, "none missing")
            }
        }
    }
}

/// The sequences one observer saw.
private final class SequenceLog: Sendable {
    let sequences = Mutex<[UInt64]>([])
}
