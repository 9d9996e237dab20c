import Foundation
import XCTest

/// A private dbus-daemon (session-style) for one test, with the repository's system-bus policy files
/// included so the daemon validates them. Any local user may connect (tests call as `nobody` too).
final class PrivateBus {
    static let dbusDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../dbus").standardized.path
    let address: String
    private let process: Process

    /// Starts the bus in `directory`, including `policies` (file names in dbus/, with each `users` key that appears
    /// in a `user="…"` or `group="…"` replaced by its value, such as a system user's name by the lab's uid); with
    /// `serviceDirectory`, it activates the services whose files are there.
    init(directory: String, policies: [String], users: [String: String] = [:], serviceDirectory: String? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon") else { throw XCTSkip("dbus-daemon is not installed") }
        var includes = ""
        for policy in policies {
            var text = try String(contentsOfFile: Self.dbusDirectory + "/" + policy, encoding: .utf8)
            for (name, replacement) in users {
                text = text.replacingOccurrences(of: "user=\"\(name)\"", with: "user=\"\(replacement)\"")
                    .replacingOccurrences(of: "group=\"\(name)\"", with: "group=\"\(replacement)\"")
            }
            try text.write(toFile: directory + "/" + policy, atomically: true, encoding: .utf8)
            includes += "  <include>\(directory)/\(policy)</include>\n"
        }
        includes += serviceDirectory.map { "  <servicedir>\($0)</servicedir>" } ?? ""
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(directory)/bus.sock</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
              </policy>
            \(includes)
            </busconfig>
            """
        try config.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        // In the foreground (--nofork), its address written to a file the test waits for.
        let output = directory + "/bus.out"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--config-file=\(directory)/bus.conf", "--nofork", "--print-address=1"]
        process.standardOutput = FileHandle(forWritingAtPath: output)
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var address = ""
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, address.isEmpty {
            guard process.isRunning else { throw LabError("dbus-daemon rejected the configuration with \(policies)") }
            address = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").first.map(String.init) ?? ""
            usleep(20_000)
        }
        guard address.hasPrefix("unix:path=") else { throw LabError("no bus address: \(address)") }
        self.address = address
        chmod(directory, 0o755)
        chmod(directory + "/bus.sock", 0o777)
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }

    /// Waits until `name` has an owner on this bus: a daemon takes its name a moment after its socket serves.
    func waitForOwner(of name: String, timeout: Double = 30, file: StaticString = #filePath, line: UInt = #line) throws {
        try eventually("\(name) on the bus", timeout: timeout, file: file, line: line) {
            let reply = try Self.run("/usr/bin/dbus-send", ["--bus=\(address)", "--print-reply", "--dest=org.freedesktop.DBus",
                                                            "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", "string:\(name)"])
            return reply.contains("boolean true")
        }
    }

    /// Starts Debian's python-dbusmock `template` with `parameters` (JSON) as a service of this bus, which it takes
    /// for the system bus, logging to `log`, and waits until it owns `name`. The caller stops it.
    func startMock(_ template: String, parameters: String = "{}", name: String, log: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-m", "dbusmock", "--system", "--template", template, "-p", parameters]
        process.environment = ["DBUS_SYSTEM_BUS_ADDRESS": address, "PATH": "/usr/bin:/bin"]
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        do {
            try waitForOwner(of: name)
        } catch {
            process.terminate()
            throw error
        }
        return process
    }

    /// Starts dbus-monitor for `rule` on this bus, writing to `output`, and waits until it monitors: it prints
    /// NameLost for its own name once it has become a monitor with its match rules in place.
    func startMonitor(_ rule: String, output: String) throws -> Process {
        let monitor = Process()
        monitor.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-monitor")
        monitor.arguments = ["--address", address, rule]
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        monitor.standardOutput = FileHandle(forWritingAtPath: output)
        try monitor.run()
        do {
            try eventually("dbus-monitor to monitor") {
                guard monitor.isRunning else { throw LabError("dbus-monitor exited (\(monitor.terminationStatus))") }
                return ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains("member=NameLost")
            }
        } catch {
            monitor.terminate()
            throw error
        }
        return monitor
    }

    private static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return output
    }

    /// The part of introspection data that describes `interface`, without comments and layout.
    static func interface(_ name: String, in xml: String) -> String {
        let withoutComments = xml.replacingOccurrences(of: #"<!--[\s\S]*?-->"#, with: "", options: .regularExpression)
        guard let start = withoutComments.range(of: #"<interface name="\#(name)">"#),
              let end = withoutComments.range(of: "</interface>", range: start.upperBound..<withoutComments.endIndex)
        else { return "" }
        return String(withoutComments[start.lowerBound..<end.upperBound])
            .replacingOccurrences(of: #">\s+<"#, with: "><", options: .regularExpression)
    }
}
