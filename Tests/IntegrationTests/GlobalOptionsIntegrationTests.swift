import Foundation
import XCTest

/// reachctl's shared options before the verb, as systemctl's (`reachctl --json status`), and after it, against a
/// real reachd in a namespace; and the options a verb has no use for refused wherever they stand.
final class GlobalOptionsIntegrationTests: XCTestCase {
    private var lab: NetLab!

    override func setUpWithError() throws {
        lab = try NetLab.make()
        try lab.addUplink("eth0", "192.0.2", metric: 100)
    }

    override func tearDown() {
        lab?.tearDown()
    }

    func testSocketAndJSONWorkBeforeAndAfterTheVerb() throws {
        try lab.startDaemon()
        let orders: [[String]] = [
            ["--socket", lab.socketPath, "--json", "status"],
            ["--json", "--socket", lab.socketPath, "status"],
            ["status", "--socket", lab.socketPath, "--json"],
            ["--json", "status", "--socket", lab.socketPath],
        ]
        for arguments in orders {
            let result = try lab.reachctl(arguments)
            XCTAssertEqual(result.status, 0, "\(arguments): \(result.err)")
            XCTAssertTrue(result.out.hasPrefix("{") && result.out.contains("\"reachable\":true"), "\(arguments): \(result.out)")
        }
        for arguments in [["--socket", lab.socketPath, "ping"], ["ping", "--socket", lab.socketPath]] {
            XCTAssertEqual(try lab.reachctl(arguments).out, "pong\n", "\(arguments)")
        }
    }

    /// The transfer options reach the download verbs from before the verb: the error names the socket given.
    func testTransferOptionsWorkBeforeTheVerb() throws {
        let missing = lab.directory + "/no-transfers.sock"
        for arguments in [["--transfers-socket", missing, "download", "list"], ["download", "list", "--transfers-socket", missing],
                          ["--json", "download", "show", "0123456789abcdef", "--transfers-socket", missing]] {
            let result = try CommandLineIntegrationTests.run(NetLab.binary("reachctl"), arguments)
            XCTAssertEqual(result.status, 2, "\(arguments): \(result.err)")
            XCTAssertTrue(result.err.contains(missing), "\(arguments): \(result.err)")
        }
    }

    /// An option the verb does not use is refused (usage error, 64) before or after it, not silently ignored.
    func testOptionsTheVerbDoesNotUseAreRefused() throws {
        let cases: [([String], String)] = [
            (["--json", "ping"], "ping prints no JSON"),
            (["wait", "--json"], "wait prints no JSON"),
            (["--socket", "/x", "download", "list"], "--socket is reachd's socket"),
            (["status", "--system"], "--system and --transfers-socket are for download"),
        ]
        for (arguments, message) in cases {
            let result = try CommandLineIntegrationTests.run(NetLab.binary("reachctl"), arguments)
            XCTAssertEqual(result.status, 64, "\(arguments): \(result.err)")
            XCTAssertTrue(result.err.contains(message), "\(arguments): \(result.err)")
        }
    }
}
