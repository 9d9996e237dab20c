import Foundation
import ReachdTransferModel
import XCTest

/// A background transfer gives way to the user's own traffic: through a tbf queue towards the receiving side, a
/// competing transfer (curl) grows the queue, and the job shows that it yields, with its rate (an upload also that it
/// moves little meanwhile). How much it gives way is bench/transfers' bottleneck figure (`--bottleneck-seconds`).
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
        // The server through a router namespace, whose tbf towards the server is the bottleneck (one on the client's
        // own eth0 would hold little: the kernel keeps each socket's bytes there to about a millisecond's worth).
        let (host, peer, router) = (lab.lab.host, lab.lab.peer, lab.lab.host + "-r")
        addTeardownBlock { _ = try? self.lab?.lab.run("ip netns del \(router)") }
        for command in [
            "ip netns add \(router)", "ip -n \(router) link set lo up", "ip netns exec \(router) sysctl -qw net.ipv4.ip_forward=1",
            "ip link add bnh netns \(host) type veth peer name bnr1 netns \(router)",
            "ip link add bnr2 netns \(router) type veth peer name bnp netns \(peer)",
            "ip -n \(host) addr add 10.77.1.2/24 dev bnh", "ip -n \(router) addr add 10.77.1.1/24 dev bnr1",
            "ip -n \(router) addr add 10.77.2.1/24 dev bnr2", "ip -n \(peer) addr add 10.77.2.2/24 dev bnp",
            "ip -n \(host) link set bnh up", "ip -n \(router) link set bnr1 up", "ip -n \(router) link set bnr2 up",
            "ip -n \(peer) link set bnp up", "ip -n \(host) route add \(TransferLab.serverAddress)/32 via 10.77.1.1",
            "ip -n \(router) route add \(TransferLab.serverAddress)/32 via 10.77.2.2", "ip -n \(peer) route add 10.77.1.0/24 via 10.77.2.1",
            "ip netns exec \(router) tc qdisc add dev bnr2 root tbf rate 16mbit burst 32kb limit 400000",
        ] {
            try lab.lab.run(command)
        }
        // Reno for both uploads: it fills a queue until it loses packets there, as Linux's default, cubic, does, only
        // sooner (the host's BBR, with a round trip this short, would give way by itself).
        try lab.lab.run("ip netns exec \(host) sysctl -qw net.ipv4.tcp_congestion_control=reno")
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

        // The user's own upload, beside it: zeros until it is stopped, sent to the sink with a length it never reaches.
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
        let yielding = try lab.waitFor(job, "yielding to the user's upload", timeout: 60) { $0.pace?.yielding == true }
        XCTAssertEqual(yielding.state, .running)
        // And gives way: over the next 4 s it hands the socket less than a quarter of what the 2 MB/s link carries
        // (Reno's own window, beside the user's, would take half of it). The sleep is the span the bytes are counted
        // over; a slower machine moves fewer.
        Thread.sleep(forTimeInterval: 4)
        let later = try lab.waitFor(job, "shown") { _ in true }
        XCTAssertLessThan(later.bytesMoved - yielding.bytesMoved, 2_000_000, "moved while yielding")
        // Which jobs yield is the download test's: one rule for both (`Job.isBackground`).
    }
}
