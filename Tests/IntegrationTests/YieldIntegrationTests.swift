import Foundation
import ReachdTransferModel
import XCTest

/// A background transfer gives way to the user's own traffic: through a tbf queue on the sending side of eth0, a
/// competing transfer (curl) grows the queue, and the job shows that it yields, with its rate. How much it gives way
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

    func testABackgroundUploadShowsItYieldsWhileTheUsersOwnFillsTheQueue() throws {
        // The queue on the server's side, as a router's would be (one on the client's own eth0 would hold little: the
        // kernel keeps each socket's bytes in it to about a millisecond's worth): what reaches the peer's eth0 goes
        // through ifb0, whose tbf is the bottleneck.
        let peer = lab.lab.peer
        for command in ["ip netns exec \(peer) ip link add ifb0 type ifb", "ip -n \(peer) link set ifb0 up",
                        "tc -n \(peer) qdisc add dev eth0 handle ffff: ingress",
                        "tc -n \(peer) filter add dev eth0 parent ffff: protocol all u32 match u32 0 0 action mirred egress redirect dev ifb0",
                        "tc -n \(peer) qdisc add dev ifb0 root tbf rate 16mbit burst 32kb limit 400000"] {
            try lab.lab.run(command)
        }
        let received = lab.lab.directory + "/received"
        try FileManager.default.createDirectory(atPath: received, withIntermediateDirectories: true)
        try lab.startPeerServer(["python3", TransferLab.uploadServer, "--address", TransferLab.serverAddress, "--port", "8082", "--dir", received,
                                 "--log", lab.lab.directory + "/uploads.log"], address: TransferLab.serverAddress, port: 8082)
        try lab.startDaemon()
        let file = lab.out + "/upload.bin"
        try lab.lab.run("truncate -s 64M \(file)")
        let job = try lab.upload(file, to: "http://mirror.test:8082/sink")
        let running = try lab.waitFor(job, "running, with a rate") { $0.state == .running && $0.pace != nil }
        XCTAssertGreaterThan(running.pace?.bytesPerSecond ?? 0, 0)

        // The user's own upload, beside it: zeros until it is stopped, sent to the sink with a length it never reaches,
        // by Reno (the namespace's from now on), which fills a queue as Linux's default, cubic, does, only sooner.
        try lab.lab.run("ip netns exec \(lab.lab.host) sysctl -qw net.ipv4.tcp_congestion_control=reno")
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        curl.arguments = ["netns", "exec", lab.lab.host, "curl", "-s", "-o", "/dev/null", "-H", "Content-Length: \(1 << 40)",
                          "-T", "-", "http://mirror.test:8082/sink"]
        curl.standardInput = FileHandle(forReadingAtPath: "/dev/zero")
        try curl.run()
        defer {
            curl.terminate()
            curl.waitUntilExit()
        }
        // How far it gives way is bench/transfers' figure: the rate it falls to here depends on how hard the user's
        // upload pushes, which the server's receive window can hold back.
        let yielding = try lab.waitFor(job, "yielding to the user's upload", timeout: 60) { $0.pace?.yielding == true }
        XCTAssertEqual(yielding.state, .running)
        // Which jobs yield is the download test's: one rule for both (`Job.isBackground`).
    }
}
