import Foundation
import XCTest

/// Package.swift declares every module a target imports and nothing it does not, and no import runs against
/// the layers in docs/architecture.md (Tests/Support/check_imports.py says which).
final class PackageImportsTests: XCTestCase {
    private static let packageDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../..").standardized.path

    private func run(_ arguments: [String]) throws -> (status: Int32, text: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: Self.packageDirectory)
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func testEveryImportIsDeclaredAndFollowsTheLayers() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else { throw XCTSkip("no /usr/bin/python3") }
        // A scratch path of its own: the package's .build is locked by the `swift test` running this.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("reachd-imports-\(getpid())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let manifest = scratch.appendingPathComponent("package.json")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let swift = ProcessInfo.processInfo.environment["SWIFT"] ?? "swift"
        let dump = Process()
        dump.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        dump.arguments = [swift, "package", "--scratch-path", scratch.path, "dump-package"]
        dump.currentDirectoryURL = URL(fileURLWithPath: Self.packageDirectory)
        FileManager.default.createFile(atPath: manifest.path, contents: nil)
        dump.standardOutput = try FileHandle(forWritingTo: manifest)
        dump.standardError = FileHandle.nullDevice
        try dump.run()
        dump.waitUntilExit()
        XCTAssertEqual(dump.terminationStatus, 0, "swift package dump-package failed")
        let check = try run(["/usr/bin/python3", "Tests/Support/check_imports.py", manifest.path, "."])
        XCTAssertEqual(check.status, 0, check.text)
        XCTAssertTrue(check.text.hasPrefix("imports: "), check.text)
    }
}
