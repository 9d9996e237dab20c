import Dispatch
import ReachdNetwork
import XCTest

/// The monitor's shell on this machine's own network (whatever it is): the handler on its queue, iteration
/// without `start(queue:)`, `cancel()`.
final class NWPathMonitorTests: XCTestCase {
    private static let queueKey = DispatchSpecificKey<String>()

    func testTheHandlerGetsTheFirstPathOnTheGivenQueue() {
        let monitor = NWPathMonitor()
        let queue = DispatchQueue(label: "monitor-test")
        queue.setSpecific(key: Self.queueKey, value: "monitor-test")
        let delivered = expectation(description: "first path")
        monitor.pathUpdateHandler = { path in
            XCTAssertEqual(DispatchQueue.getSpecific(key: Self.queueKey), "monitor-test")
            XCTAssertEqual(path, monitor.currentPath)
            delivered.fulfill()
        }
        XCTAssertNil(monitor.queue)
        monitor.start(queue: queue)
        XCTAssertTrue(monitor.queue === queue)
        wait(for: [delivered], timeout: 30)
        monitor.cancel()
    }

    func testIterationWithoutStartYieldsTheCurrentPathAndEndsOnCancel() async {
        let monitor = NWPathMonitor(prohibitedInterfaceTypes: [.cellular])
        var paths = monitor.makeAsyncIterator()
        let first = await paths.next()
        XCTAssertNotNil(first)
        XCTAssertEqual(first, monitor.currentPath)
        XCTAssertNil(monitor.queue)
        XCTAssertFalse(first?.availableInterfaces.contains { $0.type == .cellular || $0.type == .loopback } ?? true)
        monitor.cancel()
        let afterCancel = await paths.next()
        XCTAssertNil(afterCancel)
    }

    func testARequiredTypeMonitorListsOnlyThatType() async {
        let monitor = NWPathMonitor(requiredInterfaceType: .wifi)
        var paths = monitor.makeAsyncIterator()
        let first = await paths.next()
        XCTAssertEqual(first?.availableInterfaces.filter { $0.type != .wifi }, [])
        XCTAssertEqual(first?.usesInterfaceType(.wiredEthernet), false)
        monitor.cancel()
    }

    func testADescriptionNamesTheMonitorsTypesAndItsPath() {
        XCTAssertEqual(NWPathMonitor(requiredInterfaceType: .cellular).debugDescription, "NWPathMonitor(required cellular): unsatisfied")
        XCTAssertEqual(NWPathMonitor().debugDescription, "NWPathMonitor: unsatisfied")
    }

    func testEndpointsReadAsApplesDo() {
        XCTAssertEqual(NWEndpoint.hostPort(host: .ipv4(IPv4Address("192.0.2.1")!), port: 0).debugDescription, "192.0.2.1:0")
        XCTAssertEqual(NWEndpoint.hostPort(host: .ipv6(IPv6Address("2001:db8::1")!), port: .any).debugDescription, "[2001:db8::1]:0")
        XCTAssertNil(IPv4Address("2001:db8::1"))
        XCTAssertEqual(NWEndpoint.Port("443")?.rawValue, 443)
        XCTAssertEqual(NWEndpoint.Host("192.0.2.1"), .ipv4(IPv4Address("192.0.2.1")!))
        XCTAssertEqual("2001:db8::1" as NWEndpoint.Host, .ipv6(IPv6Address("2001:db8::1")!))
        XCTAssertEqual(NWEndpoint.Host("mirror.example"), .name("mirror.example", nil))
    }
}
