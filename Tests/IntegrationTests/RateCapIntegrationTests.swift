import Foundation
import ReachdTransferModel
import XCTest

/// Bandwidth caps against nginx in the peer namespace: a job's own (`--max-rate`, changed with `limit` while it runs),
/// the instance's (`[downloads] max_rate`, shared by its transfers) and the one for metered routes. Each check is a
/// lower bound on the time a capped transfer takes (80 % of what the cap allows): a loaded machine only makes it
/// slower, so the bound holds there too. How close a cap holds is measured by bench/transfers (`--caps-seconds`).
final class RateCapIntegrationTests: XCTestCase {
    private var lab: TransferLab!

    override func setUpWithError() throws {
        lab = try TransferLab()
    }

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    private func startNginx() throws {
        try FileManager.default.createDirectory(atPath: lab.www + "/up", withIntermediateDirectories: true)
        try lab.startNginx(servers: """
            client_max_body_size 64m;
            server { listen \(TransferLab.serverAddress):8080; root \(lab.www); location /up/ { dav_methods PUT; } }
            """, probePort: 8080)
    }

    /// Seconds `body` took.
    private func timed(_ body: () throws -> Void) rethrows -> Double {
        let start = Date()
        try body()
        return Date().timeIntervalSince(start)
    }

    private func assertAtLeast(_ seconds: Double, _ bytes: Int, at rate: Int, _ what: String, line: UInt = #line) {
        let floor = 0.8 * Double(bytes) / Double(rate)
        XCTAssertGreaterThanOrEqual(seconds, floor, "\(what): \(bytes) bytes in \(seconds) s, faster than the cap of \(rate) B/s allows",
                                    line: line)
    }

    func testAJobsOwnCapHoldsItAndLimitChangesItWhileItRuns() throws {
        try startNginx()
        try lab.startDaemon()
        let size = 2 << 20
        let sum = try lab.serve("f.bin", bytes: size)
        var id = ""
        // From the add: the whole file at the cap.
        let whole = try timed {
            id = try lab.add("http://mirror.test:8080/f.bin", output: lab.out + "/f.bin", ["--max-rate", "512k"])
            try lab.waitFor(id, "completed under its cap") { $0.state == .completed }
        }
        assertAtLeast(whole, size, at: 512 << 10, "the job's own cap")
        XCTAssertEqual(try lab.sha256(lab.out + "/f.bin"), sum)
        let refused = try lab.download(["limit", id, "12"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.err.contains("RATE must be bytes per second"), refused.err)
        let finished = try lab.download(["limit", id, "1M"])
        XCTAssertTrue(finished.err.contains("only an unfinished job is capped"), finished.err)

        // Lowered while it runs: of the 3 MiB left after the first, up to one more goes before the new cap holds (the
        // time the test takes to ask, the socket's 128 KiB buffer, a read of up to 256 KiB, the burst); the rest at it.
        _ = try lab.serve("g.bin", bytes: 4 << 20, seed: 2)
        let slowed = try lab.add("http://mirror.test:8080/g.bin", output: lab.out + "/g.bin", ["--max-rate", "1M"])
        XCTAssertTrue(try lab.download(["show", slowed]).out.contains("max 1 MiB/s"))
        try lab.waitFor(slowed, "a first MiB") { $0.bytesMoved >= 1 << 20 }
        let rest = try timed {
            let lowered = try lab.download(["limit", slowed, "256k", "--json"])
            XCTAssertEqual(lowered.status, 0, lowered.err)
            XCTAssertTrue(lowered.out.contains(#""maxRate":262144"#), lowered.out)
            try lab.waitFor(slowed, "completed under the lowered cap", timeout: 60) { $0.state == .completed }
        }
        assertAtLeast(rest, 2 << 20, at: 256 << 10, "the cap lowered while it ran")
    }

    func testTheInstanceCapIsSharedByItsTransfersUploadsToo() throws {
        try startNginx()
        try lab.startDaemon(config: "[downloads]\nmax_rate = \"256k\"\n")
        let size = 768 << 10
        _ = try lab.serve("a.bin", bytes: size)
        _ = try lab.serve("b.bin", bytes: size, seed: 2)
        let both = try timed {
            let a = try lab.add("http://mirror.test:8080/a.bin", output: lab.out + "/a.bin")
            let b = try lab.add("http://mirror.test:8080/b.bin", output: lab.out + "/b.bin")
            for id in [a, b] { try lab.waitFor(id, "completed under the shared cap") { $0.state == .completed } }
        }
        assertAtLeast(both, 2 * size, at: 256 << 10, "two downloads under one instance cap")

        let source = lab.www + "/a.bin"
        let sent = try timed {
            let id = try lab.upload(source, to: "http://mirror.test:8080/up/a.bin")
            try lab.waitFor(id, "an upload under the instance cap") { $0.state == .completed }
        }
        assertAtLeast(sent, size, at: 256 << 10, "an upload under the instance cap")
        XCTAssertEqual(try lab.sha256(lab.www + "/up/a.bin"), try lab.sha256(source))
    }

    func testTheMeteredCapHoldsOnAMeteredRoute() throws {
        try lab.eth0Down()
        try startNginx()
        try lab.startDaemon(config: "[downloads]\nmetered_max_rate = \"256k\"\n")
        try lab.waitForLoggedVerdict("wwan")
        let size = 768 << 10
        let sum = try lab.serve("m.bin", bytes: size)
        let took = try timed {
            let id = try lab.add("http://mirror.test:8080/m.bin", output: lab.out + "/m.bin", ["--allow-metered"])
            try lab.waitFor(id, "completed on the metered route") { $0.state == .completed }
        }
        assertAtLeast(took, size, at: 256 << 10, "the metered cap")
        XCTAssertEqual(try lab.sha256(lab.out + "/m.bin"), sum)
    }
}
