import Foundation
import XCTest

/// Package.swift declares every module a target imports and nothing it does not, and no import runs against
/// the layers in docs/architecture.md (Tests/Support/check_imports.py says which).
final class PackageImportsTests: XCTestCase {
    func testEveryImportIsDeclaredAndFollowsTheLayers() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else { throw XCTSkip("no /usr/bin/python3") }
        let root = CommandLineIntegrationTests.packageRoot
        // A scratch path of its own: the package's .build is locked by the `swift test` running this.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("reachd-imports-\(getpid())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let swift = ProcessInfo.processInfo.environment["SWIFT"] ?? "swift"
        let dump = try CommandLineIntegrationTests.run(
            "/usr/bin/env", [swift, "package", "--package-path", root, "--scratch-path", scratch.path, "dump-package"]
        )
        XCTAssertEqual(dump.status, 0, "swift package dump-package failed: \(dump.err)")
        let manifest = scratch.appendingPathComponent("package.json")
        try Data(dump.out.utf8).write(to: manifest)
        let check = try CommandLineIntegrationTests.run("/usr/bin/python3", [root + "/Tests/Support/check_imports.py", manifest.path, root])
        XCTAssertEqual(check.status, 0, check.out + check.err)
        XCTAssertTrue(check.out.hasPrefix("imports: "), check.out + check.err)
    }
}
