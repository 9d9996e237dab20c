import Foundation
import ReachdClient
import ReachdProtocol
import XCTest

/// systemd integration without systemd as PID 1: the units checked by systemd-analyze, readiness and
/// status over a NOTIFY_SOCKET the test listens on, and socket activation with LISTEN_FDS/LISTEN_PID.
final class SystemdIntegrationTests: XCTestCase {
    private var lab: NetLab!
    private static let unitDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../systemd").standardized.path

    override func setUpWithError() throws {
        lab = try NetLab.make()
        try lab.addUplink("eth0", "192.0.2", metric: 100)
    }

    override func tearDown() {
        lab?.tearDown()
    }

    private func analyze() throws -> String {
        for candidate in ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"] where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw XCTSkip("systemd-analyze is not installed")
    }

    func testUnitsVerifyAndAreHardened() throws {
        let tool = try analyze()
        // verify wants ExecStart= to exist: check a copy that points at the binary just built.
        for name in ["reachd", "reachd-transfers"] {
            let service = try String(contentsOfFile: Self.unitDirectory + "/\(name).service", encoding: .utf8)
                .replacingOccurrences(of: "ExecStart=/usr/local/bin/\(name)", with: "ExecStart=" + NetLab.binary(name))
            try service.write(toFile: lab.directory + "/\(name).service", atomically: true, encoding: .utf8)
            try FileManager.default.copyItem(atPath: Self.unitDirectory + "/\(name).socket", toPath: lab.directory + "/\(name).socket")
            let verify = try lab.run("\(tool) verify \(lab.directory)/\(name).service \(lab.directory)/\(name).socket")
            XCTAssertEqual(verify, "", "systemd-analyze verify complains about \(name)")
        }

        let security = try lab.run("\(tool) security --offline=true --no-pager \(Self.unitDirectory)/reachd.service")
        let line = try XCTUnwrap(security.split(separator: "\n").first { $0.contains("Overall exposure level") })
        let score = try XCTUnwrap(line.split(separator: " ").compactMap { Double($0) }.first)
        XCTAssertLessThanOrEqual(score, 2.0, String(line))

        // The transfer service's system instance runs as a user of its own, without capabilities: at most 2.0.
        let transfers = try lab.run("\(tool) security --offline=true --no-pager \(Self.unitDirectory)/reachd-transfers.service")
        let transfersLine = try XCTUnwrap(transfers.split(separator: "\n").first { $0.contains("Overall exposure level") })
        XCTAssertLessThanOrEqual(try XCTUnwrap(transfersLine.split(separator: " ").compactMap { Double($0) }.first), 2.0, String(transfersLine))
    }

    func testReadinessAndStatusReachNotifySocket() throws {
        let path = lab.directory + "/notify.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        try lab.startDaemon(environment: ["NOTIFY_SOCKET": path])
        func next() throws -> String {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 30_000) == 1 else { throw LabError("no sd_notify message") }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &buffer, buffer.count, 0)
            return String(decoding: buffer.prefix(max(0, n)), as: UTF8.self)
        }
        XCTAssertEqual(try next(), "READY=1\nSTATUS=internet: reachable via wired (eth0), unmetered")
        try lab.ip("route del default")
        XCTAssertEqual(try next(), "STATUS=internet: not reachable: no IPv4 default route")
        lab.stopDaemon()
        XCTAssertEqual(try next(), "STOPPING=1")
    }

    func testSocketActivation() throws {
        // What systemd does for reachd.socket: bind and listen, pass the socket as fd 3, LISTEN_PID=the service.
        let activated = lab.directory + "/activated.sock"
        // The daemon's own --socket path is ignored when a socket is passed; the lab pings the activated one.
        try FileManager.default.createSymbolicLink(atPath: lab.socketPath, withDestinationPath: activated)
        try lab.startDaemon(wrapper: ["python3", NetLab.activateScript, activated])
        let client = try ReachdConnection(path: activated)
        XCTAssertEqual(try client.verdict(for: Request(op: .status), timeout: 30).verdict.status, .wired)
        try eventually("the daemon to log the socket it was passed", detail: lab.log) {
            lab.log.contains("listening on the socket systemd passed (fd 3)")
        }
        XCTAssertEqual(lab.stopDaemon(), 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: activated), "the socket belongs to systemd and stays")
    }
}
