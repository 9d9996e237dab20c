import Foundation
import ReachdModel
import XCTest

/// The installed commands as a user meets them, before any daemon answers: `--version`, options before or after
/// the verb, and the errors of a first run. Runs the built binaries (no namespace).
final class CommandLineIntegrationTests: XCTestCase {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path

    /// Runs `executable` (a path) with `arguments`; exit status, stdout and stderr.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, out: String, err: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }

    /// reachctl, reachd and reachd-transfers print the version the Makefile gives the Debian package.
    func testEachCommandPrintsThePackagesVersion() throws {
        let make = try Self.run("/usr/bin/make", ["-s", "--no-print-directory", "-C", Self.packageRoot, "version"])
        XCTAssertEqual(make.status, 0, make.err)
        let version = make.out.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(version, PackageVersion.current)
        for command in ["reachctl", "reachd", "reachd-transfers"] {
            let result = try Self.run(NetLab.binary(command), ["--version"])
            XCTAssertEqual(result.status, 0, "\(command): \(result.err)")
            XCTAssertEqual(result.out, version + "\n", command)
        }
    }
}
