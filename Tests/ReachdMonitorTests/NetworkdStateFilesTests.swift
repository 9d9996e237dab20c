import Foundation
import Logging
@testable import ReachdModel
@testable import ReachdMonitor
import Synchronization
import XCTest

/// networkd's state files followed with inotify, in a directory tree of the test's own: a lease written the
/// way networkd writes it (a temporary file renamed into place) is read at once, a lease removed is
/// forgotten, and directories that appear after the start are picked up.
final class NetworkdStateFilesTests: XCTestCase {
    private var root = ""
    /// Every map the source published, in order.
    private final class Published: Sendable {
        let maps = Mutex<[[Int32: NetworkdLinkFacts]]>([])
        var last: [Int32: NetworkdLinkFacts]? { maps.withLock { $0.last } }
        var count: Int { maps.withLock { $0.count } }
    }

    private let published = Published()
    private let lease252 = "# This is private data. Do not parse.\nADDRESS=203.0.113.12\nNETMASK=255.255.255.0\nROUTER=203.0.113.1\nT1=60\n"

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "reachd-netif-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Writes `text` as networkd does: a temporary file in the same directory, renamed over the old one.
    private func write(_ text: String, _ path: String) throws {
        let temporary = "\(root)/\((path as NSString).deletingLastPathComponent)/.#\(UUID().uuidString)"
        try text.write(toFile: temporary, atomically: false, encoding: .utf8)
        XCTAssertEqual(rename(temporary, "\(root)/\(path)"), 0)
    }

    private func start() throws -> NetworkdStateFiles {
        let source = try NetworkdStateFiles(root: root, logger: Logger(label: "test")) { [published] facts in
            published.maps.withLock { $0.append(facts) }
        }
        try source.start()
        return source
    }

    /// Waits until the last published map is `expected`.
    private func waitFor(_ expected: [Int32: NetworkdLinkFacts], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        let seen = expectation(for: NSPredicate { [published] _, _ in published.last == expected }, evaluatedWith: nil)
        seen.expectationDescription = what
        wait(for: [seen], timeout: 10)
    }

    func testALeaseIsFollowedFromWriteToRenewalToRemoval() throws {
        for directory in ["leases", "links"] {
            try FileManager.default.createDirectory(atPath: "\(root)/\(directory)", withIntermediateDirectories: true)
        }
        try write(lease252 + "VENDOR_SPECIFIC=414e44524f49445f4d455445524544\n", "leases/3")
        let source = try start()
        defer { source.stop() }
        XCTAssertEqual(published.last, [3: NetworkdLinkFacts(androidMetered: true)], "read before start returns")

        try write(lease252, "leases/3")
        waitFor([3: NetworkdLinkFacts(androidMetered: false)], "the renewal without option 43")
        try write("CAPTIVE_PORTAL=https://portal.test/capport\nADMIN_STATE=configured\n", "links/3")
        waitFor([3: NetworkdLinkFacts(androidMetered: false, captivePortal: "https://portal.test/capport")], "the link file's portal")
        try write(lease252 + "VENDOR_SPECIFIC=0b0c414e44524f49445f4d4554455245440d\n", "leases/7")
        waitFor([3: NetworkdLinkFacts(androidMetered: false, captivePortal: "https://portal.test/capport"),
                 7: NetworkdLinkFacts(androidMetered: true)], "a second link")
        XCTAssertEqual(unlink("\(root)/leases/7"), 0)
        XCTAssertEqual(unlink("\(root)/links/3"), 0)
        waitFor([3: NetworkdLinkFacts(androidMetered: false)], "the lost lease and link file")
    }

    /// A lease that cannot be parsed is no information, not an error, and the other links stay.
    func testAnUnreadableLeaseIsNoInformation() throws {
        try FileManager.default.createDirectory(atPath: "\(root)/leases", withIntermediateDirectories: true)
        try write(lease252 + "VENDOR_SPECIFIC=414\n", "leases/4")
        try write(lease252 + "VENDOR_SPECIFIC=414e44524f49445f4d455445524544\n", "leases/5")
        let source = try start()
        defer { source.stop() }
        XCTAssertEqual(published.last, [5: NetworkdLinkFacts(androidMetered: true)])
    }

    /// Without networkd's directories (networkd not yet started), their parent is watched until they appear.
    func testDirectoriesThatAppearLaterAreWatched() throws {
        let source = try start()
        defer { source.stop() }
        XCTAssertEqual(published.count, 0, "nothing to say: nothing published")
        try FileManager.default.createDirectory(atPath: "\(root)/leases", withIntermediateDirectories: true)
        try write(lease252 + "VENDOR_SPECIFIC=414e44524f49445f4d455445524544\n", "leases/2")
        waitFor([2: NetworkdLinkFacts(androidMetered: true)], "the lease in the new directory")
    }

    /// networkd rewrites its `state` file beside the directories on every change. Once both directories
    /// exist, that must not make every lease and link file be read again.
    func testFilesBesideTheDirectoriesCauseNoRescanOnceTheyExist() throws {
        let source = try start()
        defer { source.stop() }
        for directory in ["leases", "links"] {
            try FileManager.default.createDirectory(atPath: "\(root)/\(directory)", withIntermediateDirectories: true)
        }
        try write(lease252 + "VENDOR_SPECIFIC=414e44524f49445f4d455445524544\n", "leases/2")
        try write("CAPTIVE_PORTAL=https://portal.test/capport\n", "links/2")
        // Both files are read only once both directories' creations have been seen.
        waitFor([2: NetworkdLinkFacts(androidMetered: true, captivePortal: "https://portal.test/capport")], "the new directories' files")
        let rescans = source.rescanCount
        for round in 0..<50 { try write("OPER_STATE=routable\nROUND=\(round)\n", "state") }
        // One inotify descriptor reports in order: once this renewal is read, so are the 50 rewrites before it.
        try write(lease252, "leases/2")
        waitFor([2: NetworkdLinkFacts(androidMetered: false, captivePortal: "https://portal.test/capport")], "the renewal after the rewrites")
        XCTAssertEqual(source.rescanCount, rescans, "rewrites of networkd's state file read every lease and link file again")
    }

    /// A directory that goes away is waited for again, and followed once it is back.
    func testADirectoryThatComesBackIsFollowedAgain() throws {
        for directory in ["leases", "links"] {
            try FileManager.default.createDirectory(atPath: "\(root)/\(directory)", withIntermediateDirectories: true)
        }
        try write(lease252 + "VENDOR_SPECIFIC=414e44524f49445f4d455445524544\n", "leases/2")
        let source = try start()
        defer { source.stop() }
        XCTAssertEqual(published.last, [2: NetworkdLinkFacts(androidMetered: true)])
        try FileManager.default.removeItem(atPath: "\(root)/leases")
        waitFor([:], "the lease gone with its directory")
        try FileManager.default.createDirectory(atPath: "\(root)/leases", withIntermediateDirectories: true)
        try write(lease252 + "VENDOR_SPECIFIC=414e44524f49445f4d455445524544\n", "leases/5")
        waitFor([5: NetworkdLinkFacts(androidMetered: true)], "the lease in the directory made again")
    }
}
