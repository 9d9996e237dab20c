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
        // stderr goes to a file, not a second pipe: a child that fills one pipe while the other is being read
        // to its end would wait for ever.
        let errorPath = NSTemporaryDirectory() + "run-stderr-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard FileManager.default.createFile(atPath: errorPath, contents: nil),
              let errorFile = FileHandle(forWritingAtPath: errorPath) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: errorPath])
        }
        defer { try? FileManager.default.removeItem(atPath: errorPath) }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = errorFile
        try process.run()
        try errorFile.close()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let stderr = FileManager.default.contents(atPath: errorPath) ?? Data()
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }

    /// A child that writes more than a pipe holds to stderr before it writes to stdout is read whole.
    func testRunReadsAChildThatFillsStderrFirst() throws {
        let result = try Self.run("/bin/sh", ["-c", "head -c 200000 /dev/zero | tr '\\0' e >&2; echo done"])
        XCTAssertEqual(result.status, 0)
        XCTAssertEqual(result.out, "done\n")
        XCTAssertEqual(result.err.utf8.count, 200_000)
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

    /// A scratch directory for sockets that are not there.
    private func scratch() throws -> String {
        let directory = NSTemporaryDirectory() + "reachctl-errors-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        return directory
    }

    /// No daemon behind the socket: reachctl says which is not running and how to start it, in one line.
    func testNoDaemonRunningSaysHowToStartIt() throws {
        let directory = try scratch()
        let reachd = directory + "/reachd.sock", transfers = directory + "/transfers.sock"
        let status = try Self.run(NetLab.binary("reachctl"), ["status", "--socket", reachd])
        XCTAssertEqual(status.status, 2)
        XCTAssertEqual(status.err, "reachctl: reachd is not running (no socket at \(reachd)): start it with \"systemctl start reachd.socket\" "
            + "(or run reachd yourself), or pass --socket PATH\n")
        let list = try Self.run(NetLab.binary("reachctl"), ["--system", "--transfers-socket", transfers, "download", "list"])
        XCTAssertEqual(list.status, 2)
        XCTAssertEqual(list.err, "reachctl: the system reachd-transfers is not running (no socket at \(transfers)): start it with "
            + "\"systemctl start reachd-transfers.socket\" (as root), or pass --transfers-socket PATH\n")
    }

    /// A socket in a directory closed to the user (run as nobody): not "is reachd running?" but who may connect.
    func testASocketClosedToTheUserSaysWhichToUse() throws {
        let directory = try scratch()
        XCTAssertEqual(chmod(directory, 0o700), 0)
        let socket = directory + "/reachd.sock"
        let result = try Self.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", NetLab.binary("reachctl"), "ping", "--socket", socket])
        XCTAssertEqual(result.status, 2, result.err)
        XCTAssertTrue(result.err.hasPrefix("reachctl: you may not connect to \(socket) (Permission denied): "), result.err)
        XCTAssertTrue(result.err.contains("use the system socket /run/reachd/reachd.sock or your own"), result.err)
    }

    /// `status --dbus` without a bus says so and names the socket as the other way.
    func testNoBusSaysSoAndNamesTheSocket() throws {
        let directory = try scratch()
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=\(directory)/no-bus"
        let result = try Self.run(NetLab.binary("reachctl"), ["status", "--dbus", "system"], environment: environment)
        XCTAssertEqual(result.status, 2, result.err)
        XCTAssertEqual(result.err, "reachctl: cannot connect to the system bus (No such file or directory): is dbus running? "
            + "reachctl status without --dbus asks reachd's socket\n")
    }

    /// A bus without reachd on it: `status --dbus` says reachd is not there and how to start it or ask its socket.
    func testNoReachdOnTheBusSaysHowToStartIt() throws {
        let directory = try scratch()
        let bus = try PrivateBus(directory: directory, policies: ["org.reachd.Reachability1.conf"])
        defer { bus.stop() }
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus.address
        let result = try Self.run(NetLab.binary("reachctl"), ["status", "--dbus", "system"], environment: environment)
        XCTAssertEqual(result.status, 2, result.err)
        XCTAssertTrue(result.err.hasPrefix("reachctl: reachd is not on the system bus (reading Reachable from org.reachd.Reachability1: "), result.err)
        XCTAssertTrue(result.err.hasSuffix("): start it with \"systemctl start reachd\" (reachd --bus system when run by hand), "
            + "or ask its socket: reachctl status without --dbus\n"), result.err)
    }

    /// A misspelt configuration key: reachd names the file, the key, the keys it knows and where they are described.
    func testABadConfigurationKeySaysTheFix() throws {
        let directory = try scratch()
        let config = directory + "/reachd.toml"
        try "[hosts]\nrefresh = 5\n".write(toFile: config, atomically: true, encoding: .utf8)
        let result = try Self.run(NetLab.binary("reachd"), ["--config", config, "--socket", directory + "/reachd.sock", "--bus", "none"])
        XCTAssertEqual(result.status, 2, result.err)
        XCTAssertTrue(result.err.contains("configuration: \(config): hosts: unknown key \"refresh\" (known: refresh_seconds); fix the file "
            + "and start again (every key: man 5 reachd.toml, docs/configuration.md)"), result.err)
    }

    /// Each example in a command's help runs that command: `reachctl upload show --help` shows `reachctl upload
    /// show …`, not the download group's verb (the first command of a line joined by `&&`).
    func testEachExampleInAHelpRunsItsOwnCommand() throws {
        let dump = try Self.run(NetLab.binary("reachctl"), ["--experimental-dump-help"])
        XCTAssertEqual(dump.status, 0, dump.err)
        let tool = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(dump.out.utf8)) as? [String: Any])
        var wrong: [String] = [], seen = 0
        func visit(_ info: [String: Any], path: [String]) {
            for line in (info["discussion"] as? String ?? "").split(separator: "\n") where !path.isEmpty && line.hasPrefix("  reachctl ") {
                seen += 1
                let first = (line.components(separatedBy: "&&").first ?? "").trimmingCharacters(in: .whitespaces) + " "
                if !first.contains(" " + path.joined(separator: " ") + " ") { wrong.append("\(path.joined(separator: " ")): \(line)") }
            }
            for sub in info["subcommands"] as? [[String: Any]] ?? [] {
                guard let name = sub["commandName"] as? String, name != "help" else { continue }
                visit(sub, path: path + [name])
            }
        }
        visit(try XCTUnwrap(tool["command"] as? [String: Any]), path: [])
        XCTAssertGreaterThan(seen, 40, "the examples were found")
        XCTAssertEqual(wrong, [])
    }
}
