import Foundation
import ReachdTransferModel
import XCTest

/// A background download gives way to the user's own traffic: through a tbf queue on the server's side of eth0, a
/// competing download (curl) grows the queue, and the job shows that it yields, with its rate. How much it gives way
/// is bench/transfers' bottleneck figure (`--bottleneck-seconds`).
final class YieldIntegrationTests: XCTestCase {
    private var lab: TransferLab!

    override func setUpWithError() throws {
        lab = try TransferLab()
    }

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    func testABackgroundDownloadShowsItYieldsWhileTheUsersOwnFillsTheQueue() throws {
        try lab.lab.run("ip netns exec \(lab.lab.peer) tc qdisc add dev eth0 root tbf rate 16mbit burst 32kb limit 400000")
        try lab.startNginx(port: 8080)
        try lab.startDaemon()
        _ = try lab.serve("background.bin", bytes: 64 << 20)
        _ = try lab.serve("own.bin", bytes: 64 << 20, seed: 2)
        let job = try lab.add("http://mirror.test:8080/background.bin", output: lab.out + "/background.bin")
        let running = try lab.waitFor(job, "running, with a rate") { $0.state == .running && $0.pace != nil }
        XCTAssertGreaterThan(running.pace?.bytesPerSecond ?? 0, 0)

        // The user's own download, beside it.
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        curl.arguments = ["netns", "exec", lab.lab.host, "curl", "-s", "-o", "/dev/null", "http://mirror.test:8080/own.bin"]
        try curl.run()
        defer {
            curl.terminate()
            curl.waitUntilExit()
        }
        let yielding = try lab.waitFor(job, "yielding to the user's download", timeout: 60) { $0.pace?.yielding == true }
        XCTAssertEqual(yielding.state, .running)
        // A job asked for now (--priority high) does not yield; the line shows the rate and whether it yields.
        let high = try lab.download(["add", "http://mirror.test:8080/own.bin", "--output", lab.out + "/high.bin", "--priority", "high"])
        let highID = high.out.trimmingCharacters(in: .whitespacesAndNewlines)
        let foreground = try lab.waitFor(highID, "running, with a rate") { $0.state == .running && $0.pace != nil }
        XCTAssertEqual(foreground.pace?.yielding, false)
    }
}
