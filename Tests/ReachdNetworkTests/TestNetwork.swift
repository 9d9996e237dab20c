import Foundation
import ReachdModel
@testable import ReachdNetwork
import Synchronization

/// Snapshots and helpers the engine and monitor tests share.
enum TestNetwork {
    /// eth0 (wired by its name) up with 192.0.2.2/24 and a default route via `gateway`.
    static func wired(gateway: String = "192.0.2.1") -> NetworkSnapshot {
        let up: LinkFlags = [.up, .running, .lowerUp]
        return NetworkSnapshot(
            links: [LinkInfo(index: 2, name: "eth0", flags: up, carrier: true)],
            addresses: [InterfaceAddress(interfaceIndex: 2, address: ReachdModel.IPAddress("192.0.2.2")!, prefixLength: 24)],
            defaultRoutes: [Route(family: .ipv4, metric: 100, nexthops: [Nexthop(interfaceIndex: 2, gateway: ReachdModel.IPAddress(gateway))])]
        )
    }

    /// A fresh empty directory under the temporary directory.
    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "reachd-network-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// What a callback received, in order, with a wait for a condition on it.
final class Received<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    private let arrived = DispatchSemaphore(value: 0)

    func append(_ value: Value) {
        values.withLock { $0.append(value) }
        arrived.signal()
    }

    var all: [Value] { values.withLock { $0 } }

    /// Waits (up to `timeout` seconds) until `condition` holds for what was received; whether it did.
    func wait(timeout: Double = 30, until condition: ([Value]) -> Bool) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while !condition(all) {
            guard arrived.wait(timeout: deadline) == .success else { return condition(all) }
        }
        return true
    }
}

/// The engine a monitor or a test made, for the test to hand it snapshots (a class: closures capture it).
final class EngineBox: Sendable {
    private let engine = Mutex<PathEngine?>(nil)

    func set(_ engine: PathEngine?) { self.engine.withLock { $0 = engine } }

    var current: PathEngine? { engine.withLock { $0 } }

    /// Takes the engine out (the box no longer holds it).
    func take() -> PathEngine? { engine.withLock { engine in defer { engine = nil }; return engine } }
}
