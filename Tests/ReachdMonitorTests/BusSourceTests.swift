import Logging
import ReachdMonitor
import ReachdSystem
import Synchronization
import XCTest

/// `BusSource.start(on:merger:logger:)`, the one start of NetworkManager's and ModemManager's sources: nothing
/// for `none`, nil when the bus cannot be used (connecting or starting fails), else the started source, whose
/// readings go where `merging(into:)` says.
final class BusSourceTests: XCTestCase {
    /// A source that fails where it is told to and records what it did.
    private final class FakeSource: BusSource {
        enum Failure: Error { case refused }
        /// Buses connected to, starts, and readings merged, in order, over the test.
        static let record = Mutex<[String]>([])
        static let serviceName = "Fake"
        static let withoutService = "nothing stands in"
        static let failConnecting = Mutex<Bool>(false)
        static let failStarting = Mutex<Bool>(false)

        let onChange: @Sendable ([String: Int]) -> Void

        static func merging(into merger: SnapshotMerger) -> @Sendable ([String: Int]) -> Void {
            { reading in record.withLock { $0.append("merged \(reading.keys.sorted())") } }
        }

        init(bus: Bus, logger: Logger, onChange: @escaping @Sendable ([String: Int]) -> Void) throws {
            Self.record.withLock { $0.append("connect \(bus.rawValue)") }
            if Self.failConnecting.withLock({ $0 }) { throw Failure.refused }
            self.onChange = onChange
        }

        func start() throws {
            Self.record.withLock { $0.append("start") }
            if Self.failStarting.withLock({ $0 }) { throw Failure.refused }
        }
    }

    private let merger = SnapshotMerger { _ in }
    private let logger = Logger(label: "test")

    override func setUp() {
        FakeSource.record.withLock { $0 = [] }
        FakeSource.failConnecting.withLock { $0 = false }
        FakeSource.failStarting.withLock { $0 = false }
    }

    func testNoBusConnectsToNothing() {
        XCTAssertNil(FakeSource.start(on: .none, merger: merger, logger: logger))
        XCTAssertEqual(FakeSource.record.withLock { $0 }, [])
    }

    func testAStartedSourceMergesItsReadings() throws {
        let source = try XCTUnwrap(FakeSource.start(on: .system, merger: merger, logger: logger))
        source.onChange(["wwan0": 1])
        XCTAssertEqual(FakeSource.record.withLock { $0 }, ["connect system", "start", "merged [\"wwan0\"]"])
    }

    func testABusThatCannotBeConnectedIsNoSource() {
        FakeSource.failConnecting.withLock { $0 = true }
        XCTAssertNil(FakeSource.start(on: .session, merger: merger, logger: logger))
        XCTAssertEqual(FakeSource.record.withLock { $0 }, ["connect session"])
    }

    func testASourceThatCannotStartIsNoSource() {
        FakeSource.failStarting.withLock { $0 = true }
        XCTAssertNil(FakeSource.start(on: .system, merger: merger, logger: logger))
        XCTAssertEqual(FakeSource.record.withLock { $0 }, ["connect system", "start"])
    }
}
