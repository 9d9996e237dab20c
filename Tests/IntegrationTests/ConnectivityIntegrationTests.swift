import Foundation
import ReachdModel
import XCTest

/// The opt-in connectivity check against a real HTTP server in the peer namespace (192.0.2.1:8080,
/// eth0's gateway): 204 means full, a redirect or another body a portal, no answer limited.
final class ConnectivityIntegrationTests: XCTestCase {
    private var lab: NetLab!
    private var server: Process?

    private static let serverScript = """
        import http.server, sys, time
        log = open(sys.argv[1], "a", buffering=1)
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_GET(self):
                log.write(self.path + "\\n")
                if self.path == "/generate_204":
                    self.send_response(204); self.send_header("Content-Length", "0"); self.end_headers()
                elif self.path == "/redirect":
                    self.send_response(302); self.send_header("Location", "http://192.0.2.1:8080/login")
                    self.send_header("Content-Length", "0"); self.end_headers()
                elif self.path == "/html":
                    body = b"<html>please log in</html>"
                    self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
                    self.wfile.write(body)
                elif self.path == "/hang":
                    time.sleep(20)
            def log_message(self, *args):
                pass
        http.server.ThreadingHTTPServer(("192.0.2.1", 8080), Handler).serve_forever()
        """

    override func setUpWithError() throws {
        lab = try NetLab.make()
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.peerIP("addr add 192.0.2.1/24 dev eth0")
        let script = lab.directory + "/server.py"
        try Self.serverScript.write(toFile: script, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: requestLog, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", lab.peer, "python3", script, requestLog]
        try process.run()
        server = process
        // A check that finds no server is retried only after a backoff: start the daemons once it listens.
        try eventually("the check server to listen") {
            guard process.isRunning else { throw LabError("the check server exited (\(process.terminationStatus))") }
            // From the host namespace, as the daemon will connect (the peer's loopback is down).
            return (try? lab.inHost("timeout 5 bash -c 'exec 3<>/dev/tcp/192.0.2.1/8080'")) != nil
        }
    }

    override func tearDown() {
        server?.terminate()
        server?.waitUntilExit()
        lab?.tearDown()
    }

    private var requestLog: String { lab.directory + "/requests.log" }

    private func config(_ path: String, timeout: Double = 2) -> String {
        "[connectivity]\nurl = \"http://192.0.2.1:8080\(path)\"\ntimeout_seconds = \(timeout)\ninterval_seconds = 0\n"
    }

    private func connectivity(after path: String, timeout: Double = 2, until expected: Connectivity) throws -> Verdict {
        try lab.startDaemon(config: config(path, timeout: timeout))
        defer { lab.stopDaemon() }
        return try lab.subscribe().waitFor("connectivity \(expected.rawValue)", timeout: 20) { $0.connectivity == expected }.verdict
    }

    func testCheckResults() throws {
        XCTAssertEqual(try connectivity(after: "/generate_204", until: .full).status, .wired)
        XCTAssertTrue(try connectivity(after: "/redirect", until: .portal).reachable)
        XCTAssertTrue(try connectivity(after: "/html", until: .portal).reachable)
        XCTAssertTrue(try connectivity(after: "/hang", timeout: 0.5, until: .limited).reachable)
        let asked = try String(contentsOfFile: requestLog, encoding: .utf8)
        XCTAssertTrue(asked.contains("/redirect\n"), asked)
    }

    func testNoneWhenUnreachableAndFullAgainAfterTheRouteReturns() throws {
        try lab.startDaemon(config: config("/generate_204"))
        let client = try lab.subscribe()
        try client.waitFor("full", timeout: 20) { $0.connectivity == .full }
        try lab.ip("route del default")
        try client.waitFor("none without a route") { !$0.reachable && $0.connectivity == .none }
        try lab.ip("route add default via 192.0.2.1 dev eth0 metric 100")
        try client.waitFor("checked again", timeout: 20) { $0.reachable && $0.connectivity == .full }
    }

    func testNoCheckUnlessConfigured() throws {
        try lab.startDaemon()
        XCTAssertEqual(try lab.subscribe().initial.verdict.connectivity, .unknown)
        usleep(1_500_000)
        XCTAssertEqual(try String(contentsOfFile: requestLog, encoding: .utf8), "", "nothing was contacted")
    }
}
