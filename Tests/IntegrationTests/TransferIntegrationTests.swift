import Foundation
import ReachdClient
import ReachdProtocol
import Reachability
import ReachabilityTransfers
import ReachdTransferModel
import ReachdTransferProtocol
import XCTest

/// reachd-transfers against the real kernel (namespaces with eth0 and wwan0), reachd-testserver (fault
/// injection) and nginx in the peer namespace.
final class TransferIntegrationTests: XCTestCase {
    private var lab: TransferLab!
    /// Jobs over 1 MiB are large.
    private let config = "[downloads]\nmetered_threshold = 1048576\n"

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    private func start(eth0: Bool = true) throws {
        lab = try TransferLab(eth0: eth0)
        try lab.startTestServer()
        try lab.startDaemon(config: config)
    }

    func testLargeJobDefersOnWWANWhileSmallOneRunsAndStartsWhenEth0ComesUp() throws {
        try start(eth0: false)
        let bigSum = try lab.serve("big.bin", bytes: 4 << 20)
        let smallSum = try lab.serve("small.bin", bytes: 200_000, seed: 2)
        let big = try lab.add(lab.url("big.bin"), output: lab.out + "/big.bin")
        let small = try lab.add(lab.url("small.bin"), output: lab.out + "/small.bin")
        let deferred = try lab.waitFor(big, "deferred for the metered route") {
            $0.state == .deferred && ($0.reason ?? "").contains("metered (wwan0)")
        }
        XCTAssertEqual(deferred.reason, "deferred: route to mirror.test is metered (wwan0), 4194304 bytes exceed the metered threshold of 1048576; waits for an unmetered route or --allow-metered")
        try lab.waitFor(small, "completed over wwan0") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/small.bin"), smallSum)
        XCTAssertTrue(lab.gets("big.bin").isEmpty, "no body of the large file is fetched over wwan0")
        XCTAssertFalse(FileManager.default.fileExists(atPath: lab.out + "/big.bin"))

        try lab.addEth0()
        try lab.waitFor(big, "completed over eth0") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/big.bin"), bigSum)
        let show = try lab.download(["show", big, "--json"])
        XCTAssertEqual(show.status, 0)
        XCTAssertTrue(show.out.contains("\"state\":\"completed\""), show.out)
        XCTAssertTrue(show.out.contains("\"bytesTotal\":4194304"), show.out)
    }

    func testSocketActivation() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        let activated = lab.lab.directory + "/activated.sock"
        // The daemon's own --socket path is ignored when a socket is passed; the lab's path leads to the activated one.
        try FileManager.default.createSymbolicLink(atPath: lab.socketPath, withDestinationPath: activated)
        try lab.startDaemon(config: config, wrapper: ["python3", NetLab.activateScript, activated])
        let sum = try lab.serve("a.bin", bytes: 1000)
        let id = try lab.add(lab.url("a.bin"), output: lab.out + "/a.bin")
        try lab.waitFor(id, "completed") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/a.bin"), sum)
        try eventually("the daemon to log the socket it was passed", detail: lab.log) {
            lab.log.contains("listening on the socket systemd passed (fd 3)")
        }
        lab.stopDaemon()
        XCTAssertTrue(FileManager.default.fileExists(atPath: activated), "the socket belongs to systemd and stays")
    }

    func testUnreachableServerIsWaitedForWithoutRequests() throws {
        try start(eth0: false)
        try lab.lab.ip("route del default dev wwan0")
        let sum = try lab.serve("f.bin", bytes: 100_000)
        let id = try lab.add(lab.url("f.bin"), output: lab.out + "/f.bin")
        let waiting = try lab.waitFor(id, "deferred as unreachable") { $0.state == .deferred && ($0.reason ?? "").contains("not reachable") }
        XCTAssertTrue(waiting.reason!.hasPrefix("deferred: mirror.test is not reachable"), waiting.reason!)
        XCTAssertTrue(waiting.reason!.hasSuffix("waits for a route to it"), waiting.reason!)
        usleep(1_500_000)
        XCTAssertTrue(lab.requests().isEmpty, "no attempts while there is no route")
        XCTAssertEqual(try lab.client().job(TransferRequest(op: .show, job: id)).attempts, 0)
        try lab.addEth0()
        try lab.waitFor(id, "completed once a route exists") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/f.bin"), sum)
    }

    func testRedirectsAreFollowed() throws {
        try start()
        let sum = try lab.serve("r.bin", bytes: 300_000)
        let id = try lab.add(lab.url("r.bin?redirect=3"), output: lab.out + "/r.bin")
        try lab.waitFor(id, "completed") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/r.bin"), sum)
        XCTAssertEqual(lab.gets("r.bin", atLeast: 4).map { $0["status"] as? Int }, [302, 302, 302, 200])
        let loop = try lab.add(lab.url("r.bin?redirect=9"), output: lab.out + "/loop.bin")
        let failed = try lab.waitFor(loop, "failed") { $0.state.isTerminal }
        XCTAssertEqual(failed.state, .failed)
        XCTAssertEqual(failed.reason, "failed: more than 5 redirects, or a redirect loop")
    }

    func testPriorityOrderWithOneSlot() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        try lab.startDaemon(config: "[downloads]\nconcurrency = 1\n")
        for name in ["first", "low", "normal", "high"] { try lab.serve(name + ".bin", bytes: 200_000) }
        let first = try lab.add(lab.url("first.bin?rate=400000"), output: lab.out + "/first.bin")
        try lab.waitFor(first, "running") { $0.state == .running }
        let low = try lab.add(lab.url("low.bin"), output: lab.out + "/low.bin", ["--priority", "low"])
        let normal = try lab.add(lab.url("normal.bin"), output: lab.out + "/normal.bin")
        let high = try lab.add(lab.url("high.bin"), output: lab.out + "/high.bin", ["--priority", "high"])
        XCTAssertEqual(try lab.client().job(TransferRequest(op: .show, job: high)).state, .queued, "one slot, taken")
        for id in [low, normal, high] { try lab.waitFor(id, "completed") { $0.state == .completed } }
        _ = lab.gets("low.bin", atLeast: 1)
        let order = lab.requests().filter { $0["method"] as? String == "GET" }.compactMap { $0["path"] as? String }
        XCTAssertEqual(order, ["/first.bin", "/high.bin", "/normal.bin", "/low.bin"])
    }

    func testAllowMeteredRunsALargeJobOnWWAN() throws {
        try start(eth0: false)
        let sum = try lab.serve("big.bin", bytes: 3 << 20)
        let id = try lab.add(lab.url("big.bin"), output: lab.out + "/big.bin", ["--allow-metered"])
        try lab.waitFor(id, "completed") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/big.bin"), sum)
    }

    func testRunningJobStopsWhenTheRouteTurnsMeteredAndResumesWithRange() throws {
        try start()
        let sum = try lab.serve("big.bin", bytes: 12 << 20)
        let id = try lab.add(lab.url("big.bin?rate=4000000"), output: lab.out + "/big.bin", ["--sha256", sum])
        try lab.waitFor(id, "running with 2 MB on disk") { $0.state == .running && $0.bytesMoved > 2_000_000 }
        try lab.eth0Down()
        let paused = try lab.waitFor(id, "deferred after eth0 went down", timeout: 30) { $0.state == .deferred }
        XCTAssertTrue((paused.reason ?? "").contains("metered (wwan0)"), paused.reason ?? "")
        usleep(1_000_000)
        let stillPaused = try lab.client().job(TransferRequest(op: .show, job: id))
        XCTAssertEqual(stillPaused.state, .deferred)
        XCTAssertLessThan(stillPaused.bytesMoved, 12 << 20)

        try lab.eth0Up()
        let done = try lab.waitFor(id, "completed after eth0 came back", timeout: 30) { $0.state == .completed }
        XCTAssertEqual(done.bytesMoved, 12 << 20)
        XCTAssertEqual(try lab.sha256(lab.out + "/big.bin"), sum)
        let requests = lab.gets("big.bin", atLeast: 2)
        XCTAssertEqual(requests.count, 2, "\(requests)")
        let resume = try XCTUnwrap(requests.last)
        let range = try XCTUnwrap(resume["range"] as? String)
        XCTAssertTrue(range.hasPrefix("bytes="), range)
        XCTAssertEqual(resume["status"] as? Int, 206)
        XCTAssertNotNil(resume["ifRange"] as? String)
        let offset = Int(range.dropFirst(6).dropLast())!
        XCTAssertGreaterThanOrEqual(offset, stillPaused.bytesMoved > 0 ? 2_000_000 : 0)
    }

    func testDroppedConnectionIsRetriedWithRange() throws {
        try start()
        let sum = try lab.serve("f.bin", bytes: 3_000_000)
        let id = try lab.add(lab.url("f.bin?drop-after=1000000"), output: lab.out + "/f.bin")
        try lab.waitFor(id, "completed") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/f.bin"), sum)
        let requests = lab.gets("f.bin", atLeast: 2)
        XCTAssertEqual(requests.count, 2, "\(requests)")
        // The retry asks for the rest of what reached the disk (bytes still in flight when the connection broke are asked again).
        let offset = try XCTUnwrap(Self.rangeStart(requests.last?["range"] as? String))
        XCTAssertTrue((1...1_000_000).contains(offset), "\(offset)")
        XCTAssertEqual(requests.last?["status"] as? Int, 206)
    }

    /// N in "bytes=N-".
    private static func rangeStart(_ header: String?) -> Int? {
        guard let header, header.hasPrefix("bytes="), header.hasSuffix("-") else { return nil }
        return Int(header.dropFirst(6).dropLast())
    }

    func testChangedFileBetweenAttemptsRestartsWithoutSplicing() throws {
        try start()
        _ = try lab.serve("f.bin", bytes: 3_000_000, seed: 1)
        let id = try lab.add(lab.url("f.bin?drop-after=1000000"), output: lab.out + "/f.bin")
        try lab.waitFor(id, "waiting to retry") { $0.state == .deferred && $0.bytesMoved > 0 }
        let newSum = try lab.serve("f.bin", bytes: 2_500_000, seed: 7)
        try lab.waitFor(id, "completed") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/f.bin"), newSum, "the new version, whole, not old bytes plus new")
        let retry = try XCTUnwrap(lab.gets("f.bin", atLeast: 2).last)
        XCTAssertEqual(retry["status"] as? Int, 200, "If-Range with the old ETag gets the whole new file")
        XCTAssertNotNil(retry["ifRange"] as? String)
    }

    func testServerIgnoringRangeRestartsFromZero() throws {
        try start()
        let sum = try lab.serve("f.bin", bytes: 3_000_000)
        let id = try lab.add(lab.url("f.bin?drop-after=1000000&ignore-range=1"), output: lab.out + "/f.bin")
        try lab.waitFor(id, "completed") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/f.bin"), sum)
        let requests = lab.gets("f.bin", atLeast: 2)
        XCTAssertEqual(requests.map { $0["status"] as? Int }, [200, 200])
        XCTAssertNotNil(Self.rangeStart(requests.last?["range"] as? String), "the retry asked for a range and got the whole file")
    }

    func testRangeNotSatisfiableWithTheLocalSizeMeansComplete() throws {
        try start()
        let size = 2_000_000
        let sum = try lab.serve("f.bin", bytes: size)
        let id = try lab.add(lab.url("f.bin?rate=1000000"), output: lab.out + "/f.bin")
        try lab.waitFor(id, "running") { $0.state == .running && $0.bytesMoved > 200_000 }
        XCTAssertEqual(try lab.download(["pause", id]).status, 0)
        try lab.waitFor(id, "paused") { $0.state == .paused }
        // The partial file already holds everything (as after a crash between the last write and the rename).
        try lab.lab.run("cp \(lab.www)/f.bin \(lab.out)/.f.bin.\(id).part")
        XCTAssertEqual(try lab.download(["resume", id]).status, 0)
        try lab.waitFor(id, "completed") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/f.bin"), sum)
        let last = try XCTUnwrap(lab.gets("f.bin", atLeast: 2).last)
        XCTAssertEqual(last["status"] as? Int, 416)
        XCTAssertEqual(last["range"] as? String, "bytes=\(size)-")
    }

    func testServerErrorsAreRetriedHonouringRetryAfter() throws {
        try start()
        let sum = try lab.serve("f.bin", bytes: 100_000)
        let id = try lab.add(lab.url("f.bin?status=503&status-times=2&retry-after=1"), output: lab.out + "/f.bin")
        let waiting = try lab.waitFor(id, "deferred for a retry") { $0.state == .deferred }
        XCTAssertTrue((waiting.reason ?? "").contains("server answered 503"), waiting.reason ?? "")
        try lab.waitFor(id, "completed") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/f.bin"), sum)
        XCTAssertEqual(lab.gets("f.bin", atLeast: 3).map { $0["status"] as? Int }, [503, 503, 200])
    }

    func testNotFoundFailsWithTheStatusAndWaitExitsOne() throws {
        try start()
        let id = try lab.add(lab.url("missing.bin"), output: lab.out + "/missing.bin")
        let wait = try lab.download(["wait", id, "--timeout", "20"])
        XCTAssertEqual(wait.status, 1)
        XCTAssertTrue(wait.err.contains("failed: server answered 404"), wait.err)
        let job = try lab.client().job(TransferRequest(op: .show, job: id))
        XCTAssertEqual(job.state, .failed)
        XCTAssertEqual(job.reason, "failed: server answered 404")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: lab.out), [], "no output and no partial file")
    }

    func testKillDashNineMidTransferResumesFromThePartialFile() throws {
        try start()
        let size = 10 << 20
        let sum = try lab.serve("big.bin", bytes: size)
        let id = try lab.add(lab.url("big.bin?rate=3000000"), output: lab.out + "/big.bin")
        try lab.waitFor(id, "3 MB on disk") { $0.bytesMoved > 3_000_000 }
        lab.stopDaemon(signal: SIGKILL)
        try lab.startDaemon(config: config)
        try lab.waitFor(id, "completed after the restart", timeout: 30) { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/big.bin"), sum)
        let requests = lab.gets("big.bin", atLeast: 2)
        XCTAssertEqual(requests.count, 2, "\(requests)")
        let fetched = requests.compactMap { $0["bodyBytes"] as? Int }.reduce(0, +)
        XCTAssertLessThanOrEqual(fetched - size, 1 << 20, "bytes fetched twice")
        XCTAssertEqual(requests.last?["status"] as? Int, 206)
    }

    func testDiskFullFailsWithAReasonAndLeavesNoOutput() throws {
        lab = try TransferLab()
        // Mounted before the daemon starts: `ip netns exec` gives it a copy of the mount table.
        let disk = try lab.smallDisk("small", size: "1M")
        try lab.startTestServer()
        try lab.startDaemon(config: config)
        try lab.serve("big.bin", bytes: 3_000_000)
        let id = try lab.add(lab.url("big.bin"), output: disk + "/big.bin", ["--allow-metered"])
        let failed = try lab.waitFor(id, "failed") { $0.state.isTerminal }
        XCTAssertEqual(failed.state, .failed)
        XCTAssertTrue((failed.reason ?? "").contains("disk full"), failed.reason ?? "")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: disk), [], "no output, partial file removed")
    }

    func testPreviousOutputSurvivesUntilTheNewFileIsComplete() throws {
        try start()
        try "old contents\n".write(toFile: lab.out + "/f.bin", atomically: true, encoding: .utf8)
        let sum = try lab.serve("f.bin", bytes: 4_000_000)
        let id = try lab.add(lab.url("f.bin?rate=2000000"), output: lab.out + "/f.bin")
        try lab.waitFor(id, "running") { $0.bytesMoved > 500_000 }
        XCTAssertEqual(try String(contentsOfFile: lab.out + "/f.bin", encoding: .utf8), "old contents\n")
        try lab.waitFor(id, "completed") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/f.bin"), sum)
    }

    func testBadRequestsGetClearErrors() throws {
        try start()
        try lab.serve("f.bin", bytes: 1000)
        let scheme = try lab.download(["add", "ftp://mirror.test/f.bin", "--output", lab.out + "/x"])
        XCTAssertEqual(scheme.status, 2)
        XCTAssertTrue(scheme.err.contains("(invalid_url)") && scheme.err.contains("only http and https"), scheme.err)
        let credentials = try lab.download(["add", "http://user:pw@mirror.test/f.bin", "--output", lab.out + "/x"])
        XCTAssertTrue(credentials.err.contains("credentials do not belong in URLs"), credentials.err)
        let noDirectory = try lab.download(["add", lab.url("f.bin"), "--output", lab.out + "/no/such/dir/x"])
        XCTAssertEqual(noDirectory.status, 2)
        XCTAssertTrue(noDirectory.err.contains("(invalid_output)") && noDirectory.err.contains("No such file or directory"), noDirectory.err)
        let directory = try lab.download(["add", lab.url("f.bin"), "--output", lab.out])
        XCTAssertTrue(directory.err.contains("is a directory"), directory.err)
        let unknown = try lab.download(["show", "0123456789abcdef"])
        XCTAssertTrue(unknown.err.contains("(not_found)"), unknown.err)

        // Raw protocol: bad JSON, unknown op, oversized line; the connection survives each.
        let connection = try ReachdConnection(path: lab.socketPath)
        try connection.send(raw: Array("{nope\n".utf8))
        try connection.send(raw: Array("{\"op\":\"fly\",\"id\":3}\n".utf8))
        try connection.send(raw: [UInt8](repeating: 0x61, count: 20000) + [10])
        try connection.send(raw: Array("{\"op\":\"ping\",\"id\":4}\n".utf8))
        var codes: [String] = []
        for _ in 0..<4 {
            let line = try XCTUnwrap(try connection.nextLine(timeout: 30))
            switch try TransferReply.decode(line: line) {
            case .error(let error): codes.append(error.code.rawValue)
            case .pong: codes.append("pong")
            default: codes.append("?")
            }
        }
        XCTAssertEqual(codes, ["bad_json", "unknown_op", "line_too_long", "pong"])
    }

    func testTheSystemInstanceServesRootAndItsGroupOnlyAndWritesOnlyWhereItsUserMay() throws {
        try start()
        try lab.serve("f.bin", bytes: 1000)
        // Where the instance's user may not write, nobody may make it write: root is refused with the kernel's reason.
        let rootOnly = lab.out + "/root-only"
        try FileManager.default.createDirectory(atPath: rootOnly, withIntermediateDirectories: true)
        try lab.lab.run("chmod 755 \(rootOnly)")
        let refused = try lab.download(["add", lab.url("f.bin"), "--output", rootOnly + "/x"])
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.err.contains("(permission_denied)") && refused.err.contains("Permission denied"), refused.err)

        // A user outside the instance's group is refused whatever they ask.
        let outsider = try lab.download(["list"], user: "nobody")
        XCTAssertNotEqual(outsider.status, 0)
        XCTAssertTrue(outsider.err.contains("uid 65534 is not allowed to use the system reachd-transfers"), outsider.err)

        // A member of the group (the kernel's SO_PEERGROUPS) is served, sees only their own jobs, cannot touch root's.
        let rootJob = try lab.add(lab.url("f.bin"), output: lab.out + "/x")
        let member: [UInt32] = [lab.daemonGID]
        XCTAssertEqual(try lab.download(["list", "--json"], user: "nobody", groups: member).out, "[]\n")
        let cancel = try lab.download(["cancel", rootJob], user: "nobody", groups: member)
        XCTAssertTrue(cancel.err.contains("(not_found)"), cancel.err)
        let added = try lab.download(["add", lab.url("f.bin"), "--output", lab.out + "/y"], user: "nobody", groups: member)
        XCTAssertEqual(added.status, 0, added.err)
        let id = added.out.trimmingCharacters(in: .whitespacesAndNewlines)
        try lab.waitFor(id, "completed") { $0.state == .completed }
        var info = stat()
        XCTAssertEqual(stat(lab.out + "/y", &info), 0)
        XCTAssertEqual(info.st_uid, lab.daemonUID, "the system instance writes as its own user, never as root")
        let rootList = try lab.download(["list", "--json"])
        XCTAssertTrue(rootList.out.contains(id) && rootList.out.contains(rootJob), "root sees every job")
    }

    func testItNeverRunsAsRoot() throws {
        lab = try TransferLab()
        let output = try lab.lab.run("\(NetLab.binary("reachd-transfers")) --system --socket \(lab.socketPath); echo status $?")
        XCTAssertTrue(output.contains("reachd-transfers does not run as root") && output.hasSuffix("status 1\n"), output)
    }

    func testFilesInItsOwnDirectoriesAreRefused() throws {
        try start()
        try lab.serve("f.bin", bytes: 1000)
        // The job table and the cache hold every client's data: no client may have them uploaded or overwritten.
        for path in [lab.stateDirectory + "/jobs.sqlite", lab.cacheDirectory + "/x"] {
            let added = try lab.download(["add", lab.url("f.bin"), "--output", path])
            XCTAssertEqual(added.status, 2, path)
            XCTAssertTrue(added.err.contains("inside reachd-transfers' own state or cache directory"), added.err)
        }
        let linked = lab.out + "/state-link"
        XCTAssertEqual(symlink(lab.stateDirectory, linked), 0)
        XCTAssertThrowsError(try lab.upload(linked + "/jobs.sqlite", to: lab.url("sink"))) { error in
            XCTAssertTrue("\(error)".contains("inside reachd-transfers' own state or cache directory"), "\(error)")
        }
    }

    func testPauseResumeAndCancelAgainstNginx() throws {
        lab = try TransferLab()
        try lab.startNginx(port: 8081, limitRate: 2_000_000)
        try lab.startDaemon(config: config)
        let sum = try lab.serve("n.bin", bytes: 6_000_000)
        let url = "http://mirror.test:8081/n.bin"
        let id = try lab.add(url, output: lab.out + "/n.bin", ["--sha256", sum])
        try lab.waitFor(id, "running") { $0.state == .running && $0.bytesMoved > 1_000_000 }
        let pause = try lab.download(["pause", id])
        XCTAssertEqual(pause.status, 0, pause.err)
        let paused = try lab.waitFor(id, "paused") { $0.state == .paused }
        usleep(500_000)
        XCTAssertEqual(try lab.client().job(TransferRequest(op: .show, job: id)).bytesMoved, paused.bytesMoved, "nothing arrives while paused")
        XCTAssertEqual(try lab.download(["resume", id]).status, 0)
        let wait = try lab.download(["wait", id, "--timeout", "30"])
        XCTAssertEqual(wait.status, 0, wait.err)
        XCTAssertEqual(try lab.sha256(lab.out + "/n.bin"), sum)
        // nginx logs a request once it has sent the answer, a moment after reachctl may have returned.
        let access = waited(for: { lab.nginxAccessLog }, until: { $0.contains("\" 206 ") })
        XCTAssertTrue(access.contains("\" 206 "), "the resume is a range request nginx answers with 206: \(access)")

        let second = try lab.add(url, output: lab.out + "/n2.bin")
        try lab.waitFor(second, "running") { $0.state == .running }
        XCTAssertEqual(try lab.download(["cancel", second]).status, 0)
        try lab.waitFor(second, "cancelled") { $0.state == .cancelled }
        // The job reads as cancelled at once; the partial file goes once its transfer has ended.
        let leftovers = try waited(for: { try FileManager.default.contentsOfDirectory(atPath: lab.out).filter { $0.contains("n2.bin") } },
                                   until: \.isEmpty)
        XCTAssertEqual(leftovers, [], "a cancelled job leaves no partial file")
    }

    func testSwiftLibraryQueuesControlsAndFollowsAJob() async throws {
        try start()
        let sum = try lab.serve("lib.bin", bytes: 2_000_000)
        let queue = TransferQueue(socketPath: lab.socketPath)
        let added = try await queue.add(DownloadSpec(url: lab.url("lib.bin?rate=2000000"), output: lab.out + "/lib.bin", sha256: sum))
        var states: [JobState] = []
        var last: Job?
        for try await job in queue.updates(of: added.id) {
            if states.last != job.state { states.append(job.state) }
            last = job
        }
        XCTAssertEqual(last?.state, .completed)
        XCTAssertEqual(last?.bytesMoved, 2_000_000)
        XCTAssertTrue(states.contains(.running), "\(states)")
        XCTAssertEqual(try lab.sha256(lab.out + "/lib.bin"), sum)
        let listed = try await queue.jobs()
        XCTAssertEqual(listed.map(\.id), [added.id])
        do {
            _ = try await queue.resume(added.id)
            XCTFail("a completed job cannot be resumed")
        } catch let error as ClientError {
            guard case .refused(let refusal) = error.failure else { return XCTFail("\(error)") }
            XCTAssertEqual(refusal.code, .conflict)
        }
    }
}
