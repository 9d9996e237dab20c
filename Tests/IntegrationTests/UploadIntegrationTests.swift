import Foundation
import ReachdClient
import ReachdProtocol
import ReachdTransferModel
import ReachdTransferProtocol
import XCTest

/// Uploads through reachd-transfers to a Python upload server in the peer namespace (Tests/Support/upload_server.py,
/// which parses multipart bodies with the standard library): PUT, multipart POST with awkward data, metered
/// deferral, a stop on a metered switch and a restart, a retried 503, an unreadable file, redirects (also over https,
/// with nginx), a file that gets shorter while it is sent. Plain http: the file goes to the socket with sendfile.
final class UploadIntegrationTests: XCTestCase {
    private var lab: TransferLab!
    private var server: Process?
    private var port = 0
    private var received: String { lab.lab.directory + "/received" }
    private var serverLog: String { lab.lab.directory + "/uploads.log" }

    override func tearDown() {
        if let server, server.isRunning { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
        lab?.tearDown()
        lab = nil
    }

    /// The lab, the upload server and the daemon; `https`: with a test CA the daemon trusts (`lab.makeCertificates`).
    private func start(eth0: Bool = true, https: Bool = false) throws {
        lab = try TransferLab(eth0: eth0)
        try FileManager.default.createDirectory(atPath: received, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", lab.lab.peer, "python3", TransferLab.uploadServer, "--address", TransferLab.serverAddress,
                             "--dir", received, "--log", serverLog]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        server = process
        let line = try LineReader(pipe.fileHandleForReading).next(timeout: 30)
        port = try XCTUnwrap(Int(line.dropFirst("listening ".count)), line)
        let ca = https ? "ca_file = \"\(try lab.makeCertificates(for: ["mirror.test"]))/ca.pem\"\n" : ""
        try lab.startDaemon(config: "[downloads]\nmetered_threshold = 1048576\n" + ca)
    }

    private func url(_ path: String) -> String { "http://mirror.test:\(port)/\(path)" }

    private func upload(_ file: String, to url: String, _ extra: [String] = [], user: String? = nil) throws -> String {
        try lab.upload(file, to: url, extra, user: user)
    }

    /// The server's request log. A request is logged after its answer is sent, which can be a moment after the
    /// job has the answer: waits up to 30 s for `atLeast` requests (and returns what is there then).
    private func requests(atLeast count: Int = 0) -> [[String: Any]] {
        waited(for: {
            let text = (try? String(contentsOfFile: serverLog, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }, until: { $0.count >= count })
    }

    /// A file of `bytes` pseudo-random bytes in the lab's output directory; returns its path and SHA-256.
    private func file(_ name: String, bytes: Int, seed: UInt64 = 1) throws -> (path: String, sum: String) {
        _ = try lab.serve(name, bytes: bytes, seed: seed)
        let path = lab.out + "/" + name
        try FileManager.default.moveItem(atPath: lab.www + "/" + name, toPath: path)
        return (path, try lab.sha256(path))
    }

    func testPutStreamsTheFileAndRecordsTheAnswer() throws {
        try start()
        let source = try file("put.bin", bytes: 900_000)
        let id = try upload(source.path, to: url("put.bin"))
        let done = try lab.waitFor(id, "completed") { $0.state.isTerminal }
        XCTAssertEqual(done.state, .completed, done.reason ?? "")
        XCTAssertEqual(done.kind.name, .upload)
        XCTAssertEqual(done.upload?.answer?.status, 201)
        XCTAssertTrue((done.upload?.answer?.body ?? "").contains(source.sum), done.upload?.answer?.body ?? "")
        XCTAssertEqual(done.bytesMoved, 900_000)
        XCTAssertEqual(try lab.sha256(received + "/put.bin"), source.sum)
        XCTAssertEqual(requests(atLeast: 1).last?["contentType"] as? String, "application/octet-stream")
    }

    func testMultipartBodyIsParsedBackExactly() throws {
        try start()
        // Binary data full of CRLFs, dashes and text that looks like a boundary.
        var data = Data()
        for n in 0..<20_000 { data.append(contentsOf: Array("\r\n--reachd-\(n)\r\n--\r\n\u{0}\u{ff}".utf8)) }
        let path = lab.out + "/form data \"1\".bin"
        try data.write(to: URL(fileURLWithPath: path))
        let sum = try lab.sha256("'\(path)'")
        let id = try upload(path, to: url("form"), ["--method", "POST", "--field", "title=Ünïcode \"quoted\" =value",
                                                    "--field", "empty=", "--file-field", "payload"])
        let done = try lab.waitFor(id, "completed") { $0.state.isTerminal }
        XCTAssertEqual(done.state, .completed, done.reason ?? "")
        XCTAssertEqual(done.upload?.answer?.status, 200)
        let summary = try XCTUnwrap(requests(atLeast: 1).last)
        XCTAssertEqual(summary["multipart"] as? Bool, true)
        XCTAssertEqual(summary["fields"] as? [String: String], ["title": "Ünïcode \"quoted\" =value", "empty": ""])
        let part = try XCTUnwrap((summary["files"] as? [String: Any])?["payload"] as? [String: Any])
        XCTAssertEqual(part["sha256"] as? String, sum)
        XCTAssertEqual(part["size"] as? Int, data.count)
        XCTAssertEqual(part["contentType"] as? String, "application/octet-stream")
        XCTAssertEqual(part["filename"] as? String, "form data %221%22.bin", "quotes in a file name are percent-encoded")
        XCTAssertTrue((summary["contentType"] as? String ?? "").hasPrefix("multipart/form-data; boundary=reachd-"))
    }

    func testLargeUploadWaitsForUnmeteredAndRestartsAfterAMeteredSwitch() throws {
        try start(eth0: false)
        // Small socket buffers (the daemon's sending side, the server's receiving side): what the job has sent is
        // then close to what the server has read, not megabytes parked in buffers. And a slow server (16 s for
        // the file): the switch comes long before it could have the whole body, even on a slow machine.
        try lab.lab.inHost("sysctl -qw net.ipv4.tcp_wmem='4096 16384 262144'")
        try lab.lab.run("ip netns exec \(lab.lab.peer) sysctl -qw net.ipv4.tcp_rmem='4096 65536 262144'")
        let source = try file("big.bin", bytes: 8_000_000)
        let id = try upload(source.path, to: url("big.bin?rate=500000"))
        let deferred = try lab.waitFor(id, "deferred") { $0.state == .deferred && ($0.reason ?? "").contains("metered (wwan0)") }
        XCTAssertTrue(deferred.reason!.contains("8000000 bytes exceed the metered threshold"), deferred.reason!)
        XCTAssertTrue(requests().isEmpty)
        try lab.addEth0()
        try lab.waitFor(id, "sending") { $0.state == .running && $0.bytesMoved > 0 }
        // Progress events are rate-limited; the job as shown is current.
        var sending = try lab.client().job(TransferRequest(op: .show, job: id))
        try eventually("the upload to have sent a quarter, not all", detail: "last: \(sending.state.rawValue) \(sending.bytesMoved)") {
            sending = try lab.client().job(TransferRequest(op: .show, job: id))
            return sending.state != .running || (2_000_000..<8_000_000).contains(sending.bytesMoved)
        }
        XCTAssertEqual(sending.state, .running, "still sending when the route turns metered")
        try lab.eth0Down()
        let stopped = try lab.waitFor(id, "stopped by the metered switch", timeout: 30) { $0.state == .deferred }
        XCTAssertEqual(stopped.bytesMoved, 0, "an upload starts over")
        XCTAssertTrue(stopped.reason!.contains("metered (wwan0)"), stopped.reason!)
        try lab.eth0Up()
        // The whole file again at the server's 500 kB/s: 16 s at least.
        let done = try lab.waitFor(id, "completed", timeout: 120) { $0.state.isTerminal }
        XCTAssertEqual(done.state, .completed, done.reason ?? "")
        XCTAssertEqual(try lab.sha256(received + "/big.bin"), source.sum)
        let complete = waited(for: { requests().filter { $0["completed"] as? Bool == true } }, until: { !$0.isEmpty })
        XCTAssertEqual(complete.count, 1)
        XCTAssertEqual(complete.first?["received"] as? Int, 8_000_000)
    }

    /// An answer that never ends: the job keeps its first 1 KiB and completes; the server sees the client go.
    func testAnEndlessAnswerIsReadOnlyAsFarAsItIsKept() throws {
        try start()
        let source = try file("e.bin", bytes: 10_000)
        let id = try upload(source.path, to: url("e.bin?endless=1"))
        let done = try lab.waitFor(id, "completed", timeout: 30) { $0.state.isTerminal }
        XCTAssertEqual(done.state, .completed, done.reason ?? "")
        XCTAssertEqual(done.upload?.answer?.status, 201)
        XCTAssertEqual(done.upload?.answer?.body, String(repeating: "x", count: 1024))
        let answered = try XCTUnwrap(requests(atLeast: 1).last)
        XCTAssertLessThan(answered["answerBytes"] as? Int ?? .max, 4 << 20, "the client stopped reading long before the server would have")
    }

    func testServerErrorIsRetriedAndAnUnreadableFileIsRefused() throws {
        try start()
        let source = try file("r.bin", bytes: 10_000)
        let id = try upload(source.path, to: url("r.bin?status=503&times=1"))
        let done = try lab.waitFor(id, "completed after a retry") { $0.state.isTerminal }
        XCTAssertEqual(done.state, .completed, done.reason ?? "")
        XCTAssertEqual(requests(atLeast: 2).map { $0["status"] as? Int }, [503, 201])

        // A file the instance's user may not read is refused with the kernel's reason, even for root.
        let secret = lab.lab.directory + "/secret"
        try "root only".write(toFile: secret, atomically: true, encoding: .utf8)
        chmod(secret, 0o600)
        XCTAssertThrowsError(try upload(secret, to: url("s"))) { error in
            XCTAssertTrue("\(error)".contains("(permission_denied)") && "\(error)".contains("cannot read \(secret): Permission denied"), "\(error)")
        }
    }

    /// Uploads are sent by a client that follows no redirect: a 307 or 308 is followed by the fetcher (method and body
    /// kept); a 302 would make the upload a GET and ends the job; a loop fails it.
    func testA307Or308IsFollowedWithTheBodyAndA302IsNot() throws {
        try start()
        let source = try file("r.bin", bytes: 5_000_000)
        let id = try upload(source.path, to: url("r.bin?redirect=/landed.bin"))
        let done = try lab.waitFor(id, "completed") { $0.state.isTerminal }
        XCTAssertEqual(done.state, .completed, done.reason ?? "")
        XCTAssertEqual(done.upload?.answer?.status, 201)
        XCTAssertEqual(requests(atLeast: 2).map { "\($0["path"] as? String ?? "?") \($0["status"] as? Int ?? 0)" },
                       ["/r.bin 307", "/landed.bin 201"])
        XCTAssertEqual(try lab.sha256(received + "/landed.bin"), source.sum)

        let permanent = try upload(source.path, to: url("p.bin?redirect=/moved.bin&code=308"), ["--method", "POST"])
        let moved = try lab.waitFor(permanent, "completed") { $0.state.isTerminal }
        XCTAssertEqual(moved.state, .completed, moved.reason ?? "")
        XCTAssertEqual(moved.upload?.answer?.status, 200)

        let found = try upload(source.path, to: url("f.bin?redirect=/elsewhere.bin&code=302"))
        let refused = try lab.waitFor(found, "failed") { $0.state.isTerminal }
        XCTAssertEqual(refused.reason, "failed: server answered 302")

        let loop = try upload(source.path, to: url("l.bin?redirect=self"))
        let looped = try lab.waitFor(loop, "failed") { $0.state.isTerminal }
        XCTAssertEqual(looped.reason, "failed: more than 5 redirects, or a redirect loop")
    }

    /// Over https the file is streamed, and async-http-client itself would follow a 301 or 302 to a POST, or a 303, as a
    /// GET without the body, whose 2xx would complete the upload with nothing stored. Uploads follow no redirect but the
    /// fetcher's own 307 or 308: these fail the job as over plain http, and a 307 is followed with the body.
    func testA301To303OverHTTPSFailsTheUploadAndA307IsFollowed() throws {
        try start(https: true)
        let tls = lab.lab.directory + "/tls"
        try lab.serve("landing.bin", bytes: 100)
        try lab.startNginx(servers: """
            server {
              listen \(TransferLab.serverAddress):8443 ssl;
              ssl_certificate \(tls)/server.pem; ssl_certificate_key \(tls)/server.key;
              root \(lab.www);
              location = /moved { return 301 /landing.bin; }
              location = /found { return 302 /landing.bin; }
              location = /see-other { return 303 /landing.bin; }
              location = /temporary { return 307 \(url("landed.bin")); }
            }
            """, probePort: 8443)
        let source = try file("h.bin", bytes: 20_000)
        for (path, method, status) in [("moved", "POST", 301), ("found", "POST", 302), ("see-other", "PUT", 303), ("see-other", "POST", 303)] {
            let id = try upload(source.path, to: "https://mirror.test:8443/\(path)", ["--method", method])
            let done = try lab.waitFor(id, "failed") { $0.state.isTerminal }
            XCTAssertEqual(done.state, .failed, "\(method) answered \(status): \((done.upload?.answer?.status).map(String.init) ?? "-")")
            XCTAssertTrue((done.reason ?? "").hasPrefix("failed: server answered \(status): <html>"), done.reason ?? "")
        }
        XCTAssertFalse(lab.nginxAccessLog.contains("GET /landing.bin"), lab.nginxAccessLog)

        let temporary = try upload(source.path, to: "https://mirror.test:8443/temporary")
        let landed = try lab.waitFor(temporary, "completed") { $0.state.isTerminal }
        XCTAssertEqual(landed.state, .completed, landed.reason ?? "")
        XCTAssertEqual(landed.upload?.answer?.status, 201)
        XCTAssertEqual(try lab.sha256(received + "/landed.bin"), source.sum)
    }

    /// Terminal escapes from a hostile server (its answer, quoted in the reason: OSC 52 sets the clipboard, CSI as a C1
    /// control, a bidi override) and in a file name (OSC 0 sets the window title): the daemon stores the reason escaped,
    /// reachctl prints no control character for people, and `--json` keeps the name exact.
    func testControlCharactersFromTheServerOrInAFileNameAreNeverPrinted() throws {
        try start()
        let name = lab.out + "/evil\u{1b}]0;owned\u{07}\u{9b}2J.bin"
        try FileManager.default.moveItem(atPath: try file("t.bin", bytes: 1000).path, toPath: name)
        let answer = "\u{1b}]52;c;cm0gLXJmIH4K\u{07}\r\n  line two\u{9b}31m\u{202e}"
        let id = try upload(name, to: url("t.bin?status=403&body=" + answer.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!))
        let failed = try lab.waitFor(id, "failed") { $0.state.isTerminal }
        XCTAssertEqual(failed.reason, "failed: server answered 403: \\x1b]52;c;cm0gLXJmIH4K\\x07 line two\\u{9b}31m\\u{202e}")
        let shown = [try lab.download(["list"]), try lab.download(["show", id]), try lab.download(["wait", id])]
        for (status, out, err) in shown {
            XCTAssertNotEqual(status, 2, err)
            let printed = out + err
            XCTAssertFalse(printed.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || (0x7f...0x9f).contains($0.value) },
                           printed.debugDescription)
        }
        for listed in shown[..<2] { XCTAssertTrue(listed.out.contains("evil\\x1b]0;owned\\x07\\u{9b}2J.bin"), listed.out) }
        XCTAssertTrue(shown[2].err.contains("line two\\u{9b}31m"), shown[2].err)
        let json = try lab.download(["show", id, "--json"]).out
        XCTAssertEqual(try JSONDecoder().decode(Job.self, from: Data(json.utf8)).file, name)
    }

    /// A file cut short once its last piece is handed to NIO: sendfile would send nothing, again and again, until the
    /// read timeout; the job fails at once with what happened.
    func testAFileThatGetsShorterWhileItIsSentFailsTheJob() throws {
        try start()
        let source = try file("short.bin", bytes: 12_000_000)
        let id = try upload(source.path, to: url("short.bin?rate=1000000"))
        // The first 4 MiB piece is written to the socket: the other two are handed over.
        try lab.waitFor(id, "sending") { $0.state == .running && $0.bytesMoved > 0 }
        XCTAssertEqual(truncate(source.path, 1_000_000), 0)
        let failed = try lab.waitFor(id, "failed") { $0.state.isTerminal }
        XCTAssertEqual(failed.state, .failed)
        XCTAssertEqual(failed.reason, "failed: the file to upload got shorter")
    }
}
