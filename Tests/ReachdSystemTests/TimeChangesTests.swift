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

    func testASetClockIsReported() throws {
        let changes = Changes()
        let source = try TimeChanges(zoneFile: nil) { changes.append($0) }
        try source.start()
        defer { source.stop() }
        XCTAssertEqual(changes.all, [])
        try ClockStep.byANanosecondAndBack()
        XCTAssertTrue(changes.wait { $0 == [.clockSet] }, "\(changes.all)")
        try ClockStep.byANanosecondAndBack()
        XCTAssertTrue(changes.wait { $0 == [.clockSet, .clockSet] }, "\(changes.all)")
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
        XCTAssertTrue(changes.wait { $0 == [.zoneChanged] }, "\(changes.all)")

        let copy = directory + "/zone"
        try FileManager.default.copyItem(atPath: "/usr/share/zoneinfo/Europe/Paris", toPath: copy)
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: copy)
        XCTAssertTrue(changes.wait { $0 == [.zoneChanged, .zoneChanged] }, "\(changes.all)")
        let tokyo = try Data(contentsOf: URL(fileURLWithPath: "/usr/share/zoneinfo/Asia/Tokyo"))
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: copy))
        try file.truncate(atOffset: 0)
        try file.write(contentsOf: tokyo)
        try file.close()
        XCTAssertTrue(changes.wait { $0 == [.zoneChanged, .zoneChanged, .zoneChanged] }, "\(changes.all)")
    }
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
