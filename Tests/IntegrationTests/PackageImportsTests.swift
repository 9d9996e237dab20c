import Foundation
import XCTest

/// Package.swift declares every module a target imports and nothing it does not, and no import runs against
/// the layers in docs/architecture.md, and no Swift file outside Sources/ReachdSystem handles EINTR itself instead of
/// through `SystemCall.retrying` (Tests/Support/check_imports.py says which).
final class PackageImportsTests: XCTestCase {
    func testEveryImportIsDeclaredAndFollowsTheLayers() throws {
        let check = try checkImports()
        XCTAssertEqual(check.status, 0, check.out + check.err)
        XCTAssertTrue(check.out.hasPrefix("imports: "), check.out + check.err)
    }

    /// An app that depends on ReachdNetwork or Reachability alone compiles no package but swift-log (no
    /// swift-nio, service-lifecycle, async-http-client, GRDB, swift-crypto) and none of the daemons' or the
    /// transfers' modules: what the two libraries reach through Package.swift's dependencies.
    func testTheLightLibrariesReachNoHeavyPackageOrModule() throws {
        let check = try checkImports("--light-only")
        XCTAssertEqual(check.status, 0, check.out + check.err)
        XCTAssertEqual(check.out, "light: 2 libraries checked\n", check.err)
    }

    /// check_imports.py with `options` on `swift package dump-package`'s description of the package.
    private func checkImports(_ options: String...) throws -> (status: Int32, out: String, err: String) {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else { throw XCTSkip("no /usr/bin/python3") }
        let root = CommandLineIntegrationTests.packageRoot
        // A scratch path of its own: the package's .build is locked by the `swift test` running this.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("reachd-imports-\(getpid())-\(UUID())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let swift = ProcessInfo.processInfo.environment["SWIFT"] ?? "swift"
        let dump = try CommandLineIntegrationTests.run(
            "/usr/bin/env", [swift, "package", "--package-path", root, "--scratch-path", scratch.path, "dump-package"]
        )
        XCTAssertEqual(dump.status, 0, "swift package dump-package failed: \(dump.err)")
        let manifest = scratch.appendingPathComponent("package.json")
        try Data(dump.out.utf8).write(to: manifest)
        return try CommandLineIntegrationTests.run("/usr/bin/python3", [root + "/Tests/Support/check_imports.py"] + options + [manifest.path, root])
    }
}
