import Dispatch
import Foundation
import ReachdSystem
import ReachdTestSupport
import Synchronization
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The wall clock set (a real step of the host's clock by one nanosecond and back, which needs CAP_SYS_TIME and
/// leaves the clock where it was) and the zone's file replaced or rewritten, each reported once.
final class TimeChangesTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "reachd-time-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Each step of +1 ns and back may be told once or twice (the thread may read between the two steps).
    func testASetClockIsReported() throws {
        let changes = Changes()
        let source = try TimeChanges(zoneFile: nil) { changes.append($0) }
        try source.start()
        defer { source.stop() }
        XCTAssertEqual(changes.all, [])
        for _ in 0..<2 {
            let before = changes.all.count
            try ClockStep.byANanosecondAndBack()
            XCTAssertTrue(changes.wait { $0.count > before }, "\(changes.all)")
        }
        XCTAssertEqual(Set(changes.all), [.clockSet])
    }

    /// `/etc/localtime` as timedatectl changes it (a new link renamed over the old) and as a copy written in
    /// place (a zone file bind-mounted over the path).
    func testAZoneFileReplacedOrRewrittenIsReported() throws {
        let path = directory + "/localtime"
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "/usr/share/zoneinfo/Asia/Tokyo")
        let changes = Changes()
        let source = try TimeChanges(zoneFile: path) { changes.append($0) }
        try source.start()
        defer { source.stop() }
        XCTAssertEqual(changes.all, [])

        try FileManager.default.createSymbolicLink(atPath: directory + "/.localtime.new", withDestinationPath: "/usr/share/zoneinfo/America/New_York")
        XCTAssertEqual(rename(directory + "/.localtime.new", path), 0)
        XCTAssertTrue(changes.wait { Self.zoneChanges($0) == 1 }, "\(changes.all)")

        let copy = directory + "/zone"
        try FileManager.default.copyItem(atPath: "/usr/share/zoneinfo/Europe/Paris", toPath: copy)
        try FileManager.default.createSymbolicLink(atPath: directory + "/.localtime.new", withDestinationPath: copy)
        XCTAssertEqual(rename(directory + "/.localtime.new", path), 0)
        XCTAssertTrue(changes.wait { Self.zoneChanges($0) == 2 }, "\(changes.all)")
        let tokyo = try Data(contentsOf: URL(fileURLWithPath: "/usr/share/zoneinfo/Asia/Tokyo"))
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: copy))
        try file.truncate(atOffset: 0)
        try file.write(contentsOf: tokyo)
        try file.close()
        XCTAssertTrue(changes.wait { Self.zoneChanges($0) == 3 }, "\(changes.all)")
    }

    /// Zone changes among `changes` (a step of the host's clock by someone else may come between them).
    private static func zoneChanges(_ changes: [TimeChanges.Change]) -> Int { changes.count { $0 == .zoneChanged } }
}

/// What a `TimeChanges` reported, in order, with a wait for a condition on it.
private final class Changes: Sendable {
    private let values = Mutex<[TimeChanges.Change]>([])
    private let arrived = DispatchSemaphore(value: 0)

    func append(_ value: TimeChanges.Change) {
        values.withLock { $0.append(value) }
        arrived.signal()
    }

    var all: [TimeChanges.Change] { values.withLock { $0 } }

    func wait(timeout: Double = 30, until condition: ([TimeChanges.Change]) -> Bool) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while !condition(all) {
            guard arrived.wait(timeout: deadline) == .success else { return condition(all) }
        }
        return true
    }
}
