import Foundation
import ReachdClient
import ReachdProtocol
import ReachdTransferModel
import ReachdTransferProtocol
import XCTest

/// A local user who hands the transfer service files that are not files: a FIFO as the file to upload or as
/// `~/.netrc` would have blocked the one thread that does the daemon's file operations. Now they get a clear
/// error (or are skipped) and the other jobs go on.
final class HostileUserIntegrationTests: XCTestCase {
    private var lab: TransferLab!

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    func testFIFOsAndDevicesNeverBlockTheDaemon() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        try lab.startDaemon()
        let fifo = lab.lab.directory + "/upload.fifo"
        XCTAssertEqual(mkfifo(fifo, 0o644), 0)
        for source in [fifo, "/dev/zero"] {
            XCTAssertThrowsError(try lab.upload(source, to: "http://mirror.test:\(lab.port)/sink")) { error in
                XCTAssertTrue("\(error)".contains("is not a regular file"), "\(error)")
            }
        }

        // The daemon's other jobs were never held up.
        let sum = try lab.serve("u.bin", bytes: 20_000)
        let other = try lab.add(lab.url("u.bin"), output: lab.out + "/root.bin")
        XCTAssertEqual(try lab.waitFor(other, "completed", timeout: 30) { $0.state.isTerminal }.state, .completed)
        XCTAssertEqual(try lab.sha256(lab.out + "/root.bin"), sum)
    }

    func testAFIFOAsNetrcIsSkipped() throws {
        // A user whose ~/.netrc is a FIFO: their own instance's credential lookup skips it, and the download goes on.
        lab = try TransferLab()
        try lab.startTestServer()
        let user = try lab.makeUser("f")
        XCTAssertEqual(mkfifo(user.home + "/.netrc", 0o600), 0)
        try lab.lab.run("chown \(user.name) \(user.home)/.netrc")
        try lab.startDaemon(user: user)
        let sum = try lab.serve("u.bin", bytes: 20_000)
        let added = try lab.download(["add", lab.url("u.bin"), "--output", user.home + "/u.bin"], user: user.name)
        XCTAssertEqual(added.status, 0, added.err)
        let waited = try lab.download(["wait", added.out.trimmingCharacters(in: .whitespacesAndNewlines), "--timeout", "30"], user: user.name)
        XCTAssertEqual(waited.status, 0, waited.out + waited.err)
        XCTAssertEqual(try lab.sha256(user.home + "/u.bin"), sum)
    }
}

/// A local user who pipelines requests and never reads the replies: the daemon stops reading past 16 waiting
/// requests, queues replies only up to its high-water mark, then disconnects the client; others are served.
final class PipelineFloodIntegrationTests: XCTestCase {
    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Support/pipeline_flood.py").standardized.path

    func testAClientThatDoesNotReadIsDisconnected() throws {
        let lab = try TransferLab()
        defer { lab.tearDown() }
        try lab.startDaemon()
        let ended = try lab.lab.run("python3 \(Self.script) \(lab.socketPath) 100000").trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(ended.hasPrefix("disconnected after "), ended)
        XCTAssertTrue(lab.log.contains("does not read its replies; closing it"), lab.log.suffix(2000).description)
        let answer = try lab.client().call(TransferRequest(op: .ping), timeout: 10)
        guard case .pong = answer else { return XCTFail("the daemon does not answer others: \(answer)") }
    }

    func testAClientOfAUsersOwnInstanceThatDoesNotReadIsDisconnected() throws {
        let lab = try TransferLab()
        defer { lab.tearDown() }
        let user = try lab.makeUser("p")
        try lab.startDaemon(user: user)
        let flood = TransferLab.asUser(user.name).joined(separator: " ") + " /usr/bin/python3 \(Self.script) \(lab.socketPath) 100000"
        let ended = try lab.lab.run(flood).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(ended.hasPrefix("disconnected after "), ended)
        XCTAssertTrue(lab.log.contains("does not read its replies; closing it"), lab.log.suffix(2000).description)
        let list = try lab.download(["list"], user: user.name)
        XCTAssertEqual(list.status, 0, "the user's other clients are served: \(list.err)")
    }
}

/// A local user who floods the job table: a per-user limit, finished jobs removed one by one or all at once,
/// and forgotten after `keep_finished_seconds`.
final class JobLimitIntegrationTests: XCTestCase {
    private var lab: TransferLab!

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    func testAUsersOwnInstanceHasTheLimitToo() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        let user = try lab.makeUser("j")
        try lab.startDaemon(config: "[downloads]\nmax_jobs_per_user = 1\n", user: user)
        try lab.serve("f.bin", bytes: 1000)
        let first = try lab.download(["add", lab.url("f.bin"), "--output", user.home + "/a.bin"], user: user.name)
        XCTAssertEqual(first.status, 0, first.err)
        let second = try lab.download(["add", lab.url("f.bin"), "--output", user.home + "/b.bin"], user: user.name)
        XCTAssertEqual(second.status, 2)
        XCTAssertTrue(second.err.contains("the most allowed ([downloads] max_jobs_per_user)"), second.err)
    }

    func testAFloodHitsTheLimitAndFinishedJobsCanBeRemoved() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        try lab.startDaemon(config: "[downloads]\nmax_jobs_per_user = 3\n")
        try lab.serve("f.bin", bytes: 1000)
        var ids: [String] = []
        for n in 0..<3 {
            let id = try lab.add(lab.url("f.bin"), output: lab.out + "/f\(n).bin")
            try lab.waitFor(id, "completed") { $0.state == .completed }
            ids.append(id)
        }
        let refused = try lab.download(["add", lab.url("f.bin"), "--output", lab.out + "/f3.bin"])
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.err.contains("uid 0 holds 3 jobs, the most allowed ([downloads] max_jobs_per_user)"), refused.err)

        // Another client of the system instance (a member of its group) is not held back by root's jobs.
        let user = try lab.makeUser("l")
        let theirs = try lab.download(["add", lab.url("f.bin"), "--output", "\(lab.out)/theirs.bin"], user: user.name, groups: [lab.daemonGID])
        XCTAssertEqual(theirs.status, 0, theirs.err)
        let theirID = theirs.out.trimmingCharacters(in: .whitespacesAndNewlines)
        try lab.waitFor(theirID, "completed") { $0.state == .completed }
        let notTheirs = try lab.download(["remove", theirID], user: "nobody", groups: [lab.daemonGID])
        XCTAssertTrue(notTheirs.err.contains("(not_found)"), "not someone else's job: \(notTheirs.err)")

        XCTAssertEqual(try lab.download(["remove", ids[0]]).status, 0)
        XCTAssertNotEqual(try lab.download(["show", ids[0]]).status, 0, "gone")
        XCTAssertTrue(FileManager.default.fileExists(atPath: lab.out + "/f0.bin"), "the file stays")
        let again = try lab.add(lab.url("f.bin"), output: lab.out + "/f3.bin")
        try lab.waitFor(again, "completed") { $0.state == .completed }
        let cleaned = try lab.download(["clean"])
        XCTAssertEqual(cleaned.status, 0, cleaned.err)
        XCTAssertEqual(cleaned.out.split(separator: "\n").count, 4, "root cleans everyone's finished jobs: \(cleaned.out)")
        XCTAssertEqual(try lab.download(["list"]).out, "")
    }

    func testFinishedJobsAreForgottenAfterTheirTime() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        try lab.startDaemon(config: "[downloads]\nkeep_finished_seconds = 1\n")
        try lab.serve("f.bin", bytes: 1000)
        let old = try lab.add(lab.url("f.bin"), output: lab.out + "/old.bin")
        try lab.waitFor(old, "completed") { $0.state == .completed }
        let paused = try lab.add(lab.url("f.bin?rate=100"), output: lab.out + "/slow.bin")
        XCTAssertEqual(try lab.download(["pause", paused]).status, 0)
        // Expiry is checked when jobs are added (and at start): no timer wakes the daemon for it.
        try eventually("the finished job forgotten") {
            _ = try? lab.add(lab.url("f.bin"), output: lab.out + "/new-\(UUID().uuidString.prefix(8)).bin")
            return try lab.download(["show", old]).status != 0
        }
        XCTAssertEqual(try lab.download(["show", paused]).status, 0, "an unfinished job is kept")
    }
}
