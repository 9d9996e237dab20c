import Dispatch
import ReachdModel
@testable import ReachdNetwork
import XCTest

/// Consumers that come after the engine started (a second iteration, a later `start(queue:)`) get the
/// engine's real path first, never the placeholder of a monitor that knows nothing yet. The test hands the
/// engine its snapshots (`startEngine` starts no I/O).
final class MonitorConsumersTests: XCTestCase {
    private func monitor() -> (NWPathMonitor, EngineBox) {
        let started = EngineBox()
        let monitor = NWPathMonitor(required: nil, prohibited: []) { started.set($0) }
        return (monitor, started)
    }

    func testASecondIterationBeforeTheFirstPathStartsWithTheRealPath() async {
        let (monitor, started) = monitor()
        var first = monitor.makeAsyncIterator()
        var second = monitor.makeAsyncIterator()
        XCTAssertEqual(monitor.currentPath, .unknown)
        started.current?.received(snapshot: TestNetwork.wired())
        let firstPath = await first.next()
        let secondPath = await second.next()
        XCTAssertEqual(firstPath?.status, .satisfied)
        XCTAssertEqual(secondPath, firstPath)
        monitor.cancel()
    }

    func testAStartAfterIterationBeforeTheFirstPathGetsTheRealPathFirst() {
        let (monitor, started) = monitor()
        let received = Received<NWPath>()
        monitor.pathUpdateHandler = { received.append($0) }
        let iterator = monitor.makeAsyncIterator()
        monitor.start(queue: DispatchQueue(label: "consumers-test"))
        started.current?.received(snapshot: TestNetwork.wired())
        XCTAssertTrue(received.wait { !$0.isEmpty })
        XCTAssertEqual(received.all.first?.status, .satisfied)
        // Then the next change, after it.
        started.current?.received(snapshot: TestNetwork.wired(gateway: "192.0.2.254"))
        XCTAssertTrue(received.wait { $0.count == 2 }, "\(received.all)")
        XCTAssertEqual(received.all.map { $0.gateways.map(\.debugDescription) }, [["192.0.2.1:0"], ["192.0.2.254:0"]])
        withExtendedLifetime(iterator) { monitor.cancel() }
    }

    func testAStartAfterTheFirstPathGetsTheLatestPath() {
        let (monitor, started) = monitor()
        let iterator = monitor.makeAsyncIterator()
        started.current?.received(snapshot: TestNetwork.wired())
        let received = Received<NWPath>()
        monitor.pathUpdateHandler = { received.append($0) }
        monitor.start(queue: DispatchQueue(label: "consumers-test"))
        XCTAssertTrue(received.wait { !$0.isEmpty })
        XCTAssertEqual(received.all.first?.status, .satisfied)
        withExtendedLifetime(iterator) { monitor.cancel() }
    }
}
