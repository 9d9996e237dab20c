import Foundation
import ReachdConfig
import ReachdModel
@testable import ReachdNetwork
import Synchronization
import XCTest

/// The engine's shell around the judge, fed snapshots by the test: delivery outside its lock, in order,
/// stopping from within a delivery, and the resolver's configuration followed on its own.
final class PathEngineTests: XCTestCase {
    private func engine(resolverConfiguration: String = "/nonexistent/resolv.conf",
                        deliver: @escaping @Sendable (NWPath) -> Void) -> PathEngine {
        PathEngine(configuration: Configuration(), judge: PathJudge(), resolverConfiguration: resolverConfiguration, deliver: deliver)
    }

    /// The monitor's last reference going while its path is handed on stops the engine there: this trapped
    /// ("Recursive call to lock Mutex") while paths were handed on under the engine's lock.
    func testStoppingTheEngineWhileItHandsOnAPathNeitherTrapsNorHandsOnMore() {
        // Holds the engine as a monitor does; taking it out and stopping it is what `NWPathMonitor.deinit` does.
        let owner = EngineBox()
        let received = Received<NWPath>()
        let engine = engine { path in
            received.append(path)
            owner.take()?.stop()
        }
        owner.set(engine)
        engine.received(snapshot: TestNetwork.wired())
        engine.received(snapshot: TestNetwork.wired(gateway: "192.0.2.254"))
        XCTAssertEqual(received.all.map(\.status), [.satisfied])
        XCTAssertNil(owner.current)
    }

    /// The same on one of the engine's own threads (the resolver file's, handing on the change it saw): the
    /// engine stops, its thread being joined from another thread.
    func testStoppingTheEngineWhileItsOwnThreadHandsOnAPathStopsIt() throws {
        let directory = try TestNetwork.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let owner = EngineBox()
        let received = Received<NWPath>()
        let engine = engine(resolverConfiguration: directory + "/resolv.conf") { path in
            if path.supportsDNS { owner.take()?.stop() }
            received.append(path)
        }
        owner.set(engine)
        engine.followResolverConfiguration()
        engine.received(snapshot: TestNetwork.wired())
        try "nameserver 192.0.2.53\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        XCTAssertTrue(received.wait { $0.count == 2 }, "\(received.all)")
        XCTAssertNil(owner.current)
        engine.received(snapshot: TestNetwork.wired(gateway: "192.0.2.254"))
        XCTAssertEqual(received.all.map(\.supportsDNS), [false, true])
    }

    /// A path judged while one is handed on (here by the same thread) comes next, after it: never first, never twice.
    func testAPathJudgedDuringADeliveryIsHandedOnNextInOrder() {
        let received = Received<NWPath>()
        let nested = Atomic<Bool>(false)
        let box = EngineBox()
        let created = engine { path in
            received.append(path)
            if !nested.exchange(true, ordering: .relaxed) {
                box.current?.received(snapshot: TestNetwork.wired(gateway: "192.0.2.254"))
                box.current?.received(snapshot: TestNetwork.wired(gateway: "192.0.2.254"))
            }
        }
        box.set(created)
        created.received(snapshot: TestNetwork.wired())
        XCTAssertEqual(received.all.map { $0.gateways.map(\.debugDescription) }, [["192.0.2.1:0"], ["192.0.2.254:0"]])
        box.take()?.stop()
    }

    /// Writing or removing a name server in resolv.conf alone (no network change) gives a new path.
    func testTheResolverConfigurationAloneChangesSupportsDNS() throws {
        let directory = try TestNetwork.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/resolv.conf"
        let received = Received<NWPath>()
        let engine = engine(resolverConfiguration: file) { received.append($0) }
        defer { engine.stop() }
        engine.followResolverConfiguration()
        engine.received(snapshot: TestNetwork.wired())
        XCTAssertEqual(received.all.map(\.supportsDNS), [false])

        // Replaced by a rename, as resolvconf and systemd-resolved do.
        try "search example\nnameserver 192.0.2.53\n".write(toFile: file, atomically: true, encoding: .utf8)
        XCTAssertTrue(received.wait { $0.last?.supportsDNS == true }, "\(received.all)")
        XCTAssertEqual(received.all.map(\.status), [.satisfied, .satisfied])

        try FileManager.default.removeItem(atPath: file)
        XCTAssertTrue(received.wait { $0.count == 3 }, "\(received.all)")
        XCTAssertEqual(received.all.last?.supportsDNS, false)
    }
}
