import Foundation
import XCTest

/// Examples/PathMonitorUsage, Apple's documented NWPathMonitor usage built unchanged against ReachdNetwork, run
/// in a lab namespace as eth0 (wired, metric 100) and wwan0 (cellular, by its name, metric 200) come and go.
/// Its three monitors print one line per update: `all` (a handler on a queue), `cellular`
/// (`requiredInterfaceType: .cellular`) and `no-cellular` (`for await`, `prohibitedInterfaceTypes: [.cellular]`).
final class PathMonitorIntegrationTests: XCTestCase {
    private var lab: NetLab!
    private var usage: Process?
    private var lines: LineReader!
    /// Every line read so far, by monitor.
    private var seen: [String: [String]] = [:]

    private static let wiredPath = "status=satisfied expensive=false constrained=false wired=true cellular=false wifi=false ipv4=true ipv6=false"
    private static let cellularPath = "status=satisfied expensive=true constrained=false wired=false cellular=true wifi=false ipv4=true ipv6=false"
    private static let noPath = "status=unsatisfied expensive=false constrained=false wired=false cellular=false wifi=false ipv4=false ipv6=false"

    override func setUpWithError() throws {
        lab = try NetLab.make()
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.addUplink("wwan0", "198.51.100", metric: 200)
    }

    override func tearDown() {
        if let usage, usage.isRunning {
            usage.terminate()
            usage.waitUntilExit()
        }
        lab?.tearDown()
    }

    func testFollowsWiredAndCellularComingAndGoingWithoutReachd() throws {
        try startUsage(socket: lab.directory + "/no-reachd.sock")
        try expect("all", "\(Self.wiredPath) interfaces=eth0,wwan0 gateways=192.0.2.1:0")
        try expect("cellular", "\(Self.cellularPath) interfaces=wwan0 gateways=198.51.100.1:0")
        try expect("no-cellular", "\(Self.wiredPath) interfaces=eth0 gateways=192.0.2.1:0")

        try lab.ip("link set eth0 down")
        try expect("all", "\(Self.cellularPath) interfaces=wwan0 gateways=198.51.100.1:0")
        try expect("no-cellular", "\(Self.noPath) interfaces= gateways=")

        try lab.ip("link set wwan0 down")
        try expect("all", "\(Self.noPath) interfaces= gateways=")
        try expect("cellular", "\(Self.noPath) interfaces= gateways=")
        // eth0's going changed nothing the cellular monitor sees: no line for it.
        XCTAssertEqual(seen["cellular"]?.count, 2, "\(seen["cellular"] ?? [])")

        try bringBack("eth0", gateway: "192.0.2.1", metric: 100)
        try expect("all", "\(Self.wiredPath) interfaces=eth0 gateways=192.0.2.1:0")
        try expect("no-cellular", "\(Self.wiredPath) interfaces=eth0 gateways=192.0.2.1:0")

        try bringBack("wwan0", gateway: "198.51.100.1", metric: 200)
        try expect("cellular", "\(Self.cellularPath) interfaces=wwan0 gateways=198.51.100.1:0")
        try expect("all", "\(Self.wiredPath) interfaces=eth0,wwan0 gateways=192.0.2.1:0")
        // A better cellular route: the kernel would use wwan0 first, and so does the path.
        try lab.ip("route replace default via 198.51.100.1 dev wwan0 metric 50")
        try expect("all", "\(Self.cellularPath) interfaces=wwan0,eth0 gateways=198.51.100.1:0")
    }

    func testTakesReachdsMeteredWordForThePathsInterfaceWhileReachdRuns() throws {
        try lab.startDaemon(config: "[[interface]]\nmatch = \"eth0\"\nmetered = true\n")
        try startUsage(socket: lab.socketPath)
        let expensiveWired = Self.wiredPath.replacingOccurrences(of: "expensive=false", with: "expensive=true")
        try expect("all", "\(expensiveWired) interfaces=eth0,wwan0 gateways=192.0.2.1:0")
        try expect("no-cellular", "\(expensiveWired) interfaces=eth0 gateways=192.0.2.1:0")
        // reachd's path is eth0's: the cellular monitor's path keeps its own word (wwan is metered).
        try expect("cellular", "\(Self.cellularPath) interfaces=wwan0 gateways=198.51.100.1:0")

        _ = lab.stopDaemon()
        try expect("all", "\(Self.wiredPath) interfaces=eth0,wwan0 gateways=192.0.2.1:0")
        try expect("no-cellular", "\(Self.wiredPath) interfaces=eth0 gateways=192.0.2.1:0")
    }

    func testAConfiguredLowDataInterfaceIsConstrained() throws {
        try startUsage(socket: lab.directory + "/no-reachd.sock", config: "[[interface]]\nmatch = \"eth0\"\nconstrained = true\n")
        let constrainedWired = Self.wiredPath.replacingOccurrences(of: "constrained=false", with: "constrained=true")
        try expect("all", "\(constrainedWired) interfaces=eth0,wwan0 gateways=192.0.2.1:0")
        try expect("cellular", "\(Self.cellularPath) interfaces=wwan0 gateways=198.51.100.1:0")
        try lab.ip("link set eth0 down")
        try expect("all", "\(Self.cellularPath) interfaces=wwan0 gateways=198.51.100.1:0")
    }

    /// Starts the example in the lab's namespace with `socket` as reachd's (`REACHD_SOCKET`) and `config` as
    /// its configuration (`REACHD_CONFIG`: the machine's /etc/reachd/reachd.toml is none of the test's business).
    private func startUsage(socket: String, config: String = "") throws {
        let configPath = lab.directory + "/path-monitor.toml"
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ip", "netns", "exec", lab.host, try Self.usageBinary()]
        process.environment = ProcessInfo.processInfo.environment.merging(["REACHD_SOCKET": socket, "REACHD_CONFIG": configPath]) { _, new in new }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        usage = process
        lines = LineReader(pipe.fileHandleForReading)
    }

    /// Reads lines until `monitor`'s latest is exactly `expected` (fails with what it printed otherwise).
    private func expect(_ monitor: String, _ expected: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let deadline = Date().addingTimeInterval(30)
        while seen[monitor]?.last != expected {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let next = try? lines.next(timeout: left) else {
                XCTFail("\(monitor): no line \"\(expected)\"; printed: \(seen)", file: file, line: line)
                throw LabError("no expected line")
            }
            let name = String(next.prefix { $0 != " " })
            seen[name, default: []].append(String(next.dropFirst(name.count + 1)))
        }
    }

    /// Sets `name` up again and, once it runs, gives back its default route.
    private func bringBack(_ name: String, gateway: String, metric: Int) throws {
        try lab.ip("link set \(name) up")
        try eventually("\(name) running") { try lab.run("ip -n \(lab.host) -o link show \(name)").contains("state UP") }
        try lab.ip("route add default via \(gateway) dev \(name) metric \(metric)")
    }

    /// The example's binary: REACHD_PATH_MONITOR_USAGE, else Examples/PathMonitorUsage's debug build (`make
    /// test` builds it first; a plain `swift test` builds it here).
    private static func usageBinary() throws -> String {
        if let path = ProcessInfo.processInfo.environment["REACHD_PATH_MONITOR_USAGE"] { return path }
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Examples/PathMonitorUsage").standardized.path
        let binary = package + "/.build/debug/path-monitor-usage"
        if !FileManager.default.isExecutableFile(atPath: binary) {
            let build = Process()
            build.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            build.arguments = ["swift", "build", "--package-path", package, "--product", "path-monitor-usage"]
            try build.run()
            build.waitUntilExit()
            guard build.terminationStatus == 0 else { throw LabError("swift build --package-path \(package) failed") }
        }
        return binary
    }
}
