import Foundation
import ReachdModel
import ReachdTransferModel
import ReachdTransferProtocol
import XCTest

/// Jobs' constraints end to end through reachctl: a job held until its not-before time and woken by the
/// scheduler's timer, a download that waits for free space on its destination, and the options' refusals.
final class ConstraintIntegrationTests: XCTestCase {
    private var lab: TransferLab!

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    func testNotBeforeHoldsAJobUntilItsTimeAndTheTimerStartsIt() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        try lab.startDaemon()
        let sum = try lab.serve("n.bin", bytes: 300_000)
        let start = Timestamp(microseconds: Timestamp.now().microseconds + 4_000_000)
        let id = try lab.add(lab.url("n.bin"), output: lab.out + "/n.bin", ["--not-before", start.description])
        let waiting = try lab.waitFor(id, "waiting until its time") { $0.state == .deferred }
        XCTAssertTrue((waiting.reason ?? "").hasPrefix("waiting until "), waiting.reason ?? "")
        let listed = try lab.download(["show", id])
        XCTAssertTrue(listed.out.contains("{not-before=\(start)}"), listed.out)
        let done = try lab.waitFor(id, "completed after its time") { $0.state == .completed }
        XCTAssertGreaterThanOrEqual(done.updated, start)
        XCTAssertEqual(try lab.sha256(lab.out + "/n.bin"), sum)
    }

    /// A deadline that relaxes lets a large job waiting for an unmetered route use the metered one once it has
    /// passed; one that fails ends a job still held back when it passes; a user-initiated job (`--now`) runs at once.
    func testDeadlinesRelaxOrFailAndNowRunsAtOnce() throws {
        lab = try TransferLab(eth0: false)
        try lab.startTestServer()
        try lab.startDaemon(config: "[downloads]\nmetered_threshold = 1048576\n")
        let sum = try lab.serve("d.bin", bytes: 3_000_000)
        let deadline = Timestamp(microseconds: Timestamp.now().microseconds + 3_000_000)
        let relaxed = try lab.add(lab.url("d.bin"), output: lab.out + "/d.bin", ["--deadline", deadline.description])
        let failing = try lab.add(lab.url("d.bin"), output: lab.out + "/e.bin",
                                  ["--deadline", deadline.description, "--after-deadline", "fail", "--not-before", "2099-01-01T00:00:00Z"])
        let waiting = try lab.waitFor(relaxed, "waiting for an unmetered route") { $0.state == .deferred && ($0.reason ?? "").contains("metered (wwan0)") }
        XCTAssertEqual(waiting.bytesMoved, 0)
        let done = try lab.waitFor(relaxed, "completed on wwan0 after its deadline") { $0.state == .completed }
        XCTAssertGreaterThanOrEqual(done.updated, deadline)
        XCTAssertEqual(try lab.sha256(lab.out + "/d.bin"), sum)
        let failed = try lab.waitFor(failing, "failed at its deadline") { $0.state.isTerminal }
        XCTAssertEqual(failed.state, .failed)
        XCTAssertTrue((failed.reason ?? "").hasPrefix("failed: its deadline ("), failed.reason ?? "")

        let now = try lab.add(lab.url("d.bin"), output: lab.out + "/n.bin", ["--now", "--not-before", "2099-01-01T00:00:00Z"])
        let ran = try lab.waitFor(now, "completed at once on wwan0") { $0.state.isTerminal }
        XCTAssertEqual(ran.state, .completed, ran.reason ?? "")
        XCTAssertEqual(try lab.sha256(lab.out + "/n.bin"), sum)
    }

    /// A real window of local time that opens at the next minute (the host's zone, as the daemon reads it): the
    /// job waits with the window's time in its reason, and the timer starts it when the window opens.
    func testAWindowOpeningAtTheNextMinuteStartsTheJob() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        try lab.startDaemon()
        let sum = try lab.serve("w.bin", bytes: 300_000)
        let now = Timestamp.now()
        let wall = now.microseconds / 1_000_000 + Int64(SystemTimeZone().offsetSeconds(at: now))
        // At least 10 s ahead, so the job is surely added before the window opens.
        let opens = Int((wall + 70) / 60 % 1440)
        let window = "\(TransferLab.clock(opens))-\(TransferLab.clock((opens + 1) % 1440))"
        let id = try lab.add(lab.url("w.bin"), output: lab.out + "/w.bin", ["--window", window])
        let waiting = try lab.waitFor(id, "waiting for the window") { $0.state == .deferred && $0.reason != nil }
        XCTAssertEqual(waiting.reason, "waiting until \(TransferLab.clock(opens)) (window \(window))")
        XCTAssertEqual(lab.gets("w.bin").count, 0)
        let done = try lab.waitFor(id, "completed in the window", timeout: 150) { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/w.bin"), sum)
        XCTAssertTrue(DailyWindow(window)!.contains(done.updated, zone: SystemTimeZone()), "\(done.updated)")
    }


    func testStorageNotLowWaitsForFreeSpaceOnTheDestination() throws {
        lab = try TransferLab()
        // Mounted before the daemon starts: `ip netns exec` gives it a copy of the mount table (a remount's new size
        // is the file system's own, so the daemon sees it).
        let disk = try lab.smallDisk("small", size: "40M")
        try lab.startTestServer()
        try lab.startDaemon()
        let sum = try lab.serve("s.bin", bytes: 3_000_000)
        let id = try lab.add(lab.url("s.bin"), output: disk + "/s.bin", ["--storage-not-low"])
        let waiting = try lab.waitFor(id, "waiting for free space") { $0.state == .deferred && ($0.reason ?? "").contains("free at the destination") }
        XCTAssertTrue((waiting.reason ?? "").contains("the job needs 3.0 MB more"), waiting.reason ?? "")
        XCTAssertEqual(waiting.bytesTotal, 3_000_000, "the size was asked first")
        _ = try lab.lab.run("mount -o remount,size=200M \(disk)")
        // The free space is looked at again every 30 s while a job asks for it.
        let done = try lab.waitFor(id, "completed once there is room", timeout: 90) { $0.state == .completed }
        XCTAssertEqual(done.bytesMoved, 3_000_000)
        XCTAssertEqual(try lab.sha256(disk + "/s.bin"), sum)
    }

    /// reachd with a data budget on wwan0 (the only uplink): a job that does not fit what is left waits, saying how
    /// much is used; with a larger budget (reachd restarted) it runs on the metered link and completes.
    func testWithinBudgetWaitsWhileTheJobDoesNotFitTheBudgetOfItsLink() throws {
        lab = try TransferLab(eth0: false)
        try lab.startTestServer()
        let state = lab.lab.directory + "/reachd-state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        func startReachd(limit: Int) throws {
            try lab.lab.startDaemon(config: "[[budget]]\ninterface = \"wwan*\"\nlimit = \(limit)\nperiod = \"day\"\n",
                                    arguments: ["--sysfs-root", "/sys", "--state-directory", state])
        }
        try startReachd(limit: 2_000_000)
        try lab.startDaemon(config: "[downloads]\nmetered_threshold = 1048576\n",
                            arguments: ["--verdicts", "reachd", "--reachd-socket", lab.lab.socketPath])
        let sum = try lab.serve("b.bin", bytes: 3_000_000)
        let id = try lab.add(lab.url("b.bin"), output: lab.out + "/b.bin", ["--network", "within-budget"])
        let waiting = try lab.waitFor(id, "waiting for the budget") { ($0.reason ?? "").contains("used on wwan0 today") }
        XCTAssertEqual(waiting.state, .deferred)
        XCTAssertTrue((waiting.reason ?? "").hasSuffix("of 2.0 MB used on wwan0 today; the job needs 3.0 MB more"), waiting.reason ?? "")
        XCTAssertEqual(lab.gets("b.bin").count, 0, "only its size was asked")

        _ = lab.lab.stopDaemon()
        try startReachd(limit: 100_000_000)
        let done = try lab.waitFor(id, "completed within the larger budget") { $0.state == .completed }
        XCTAssertEqual(done.bytesMoved, 3_000_000)
        XCTAssertEqual(try lab.sha256(lab.out + "/b.bin"), sum)
    }

    /// reachd counting a daily budget of 10 MB on wwan*, the lab's only uplink, and reachd-transfers taking its verdicts.
    private func startWithABudgetOf10MB() throws {
        lab = try TransferLab(eth0: false)
        try lab.startTestServer()
        let state = lab.lab.directory + "/reachd-state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try lab.lab.startDaemon(config: "[[budget]]\ninterface = \"wwan*\"\nlimit = 10000000\nperiod = \"day\"\n",
                                arguments: ["--sysfs-root", "/sys", "--state-directory", state])
        try lab.startDaemon(config: "[downloads]\nmetered_threshold = 1048576\n",
                            arguments: ["--verdicts", "reachd", "--reachd-socket", lab.lab.socketPath])
    }

    /// Two within-budget jobs that each fit what is left of the budget, but not together: the second waits while
    /// the first runs, since what the first still has to move is promised to it.
    func testWithinBudgetJobsReserveWhatTheyStillNeed() throws {
        try startWithABudgetOf10MB()
        let sum = try lab.serve("r.bin", bytes: 6_000_000)
        let first = try lab.add(lab.url("r.bin?rate=1000000"), output: lab.out + "/first.bin", ["--network", "within-budget"])
        _ = try lab.waitFor(first, "running") { $0.state == .running && $0.bytesMoved > 0 }
        let second = try lab.add(lab.url("r.bin"), output: lab.out + "/second.bin", ["--network", "within-budget"])
        let waiting = try lab.waitFor(second, "waiting for what the first still needs") { ($0.reason ?? "").contains("promised to running jobs") }
        XCTAssertEqual(waiting.state, .deferred, waiting.reason ?? "")
        XCTAssertEqual(waiting.bytesMoved, 0)
        XCTAssertEqual(try lab.waitFor(first, "completed") { $0.state.isTerminal }.state, .completed)
        XCTAssertEqual(try lab.sha256(lab.out + "/first.bin"), sum)
    }

    /// The same two jobs let go together (their not-before time passes at once): one runs, never stopped; the other
    /// waits, and once the first has ended it still counts the first's 6 MB, which the count it sees does not hold
    /// (reachd tells a count alone to no subscriber): it never starts.
    func testTwoWithinBudgetJobsLetGoTogetherRunOneAtATime() throws {
        try startWithABudgetOf10MB()
        let sum = try lab.serve("p1.bin", bytes: 6_000_000)
        _ = try lab.serve("p2.bin", bytes: 6_000_000)
        let notBefore = Timestamp(microseconds: Timestamp.now().microseconds + 3_000_000).description
        let ids = try ["p1", "p2"].map {
            try lab.add(lab.url("\($0).bin?rate=1500000"), output: lab.out + "/\($0).bin", ["--network", "within-budget", "--not-before", notBefore])
        }
        let done = try waited(for: { try ids.map { try lab.client().job(TransferRequest(op: .show, job: $0)) } },
                              until: { $0.contains { $0.state == .completed } })
        let (ran, held) = done[0].state == .completed ? (0, 1) : (1, 0)
        XCTAssertEqual(done[ran].state, .completed)
        XCTAssertEqual(try lab.sha256(lab.out + "/p\(ran + 1).bin"), sum)
        // Decided again when the first ended: its 6 MB moved are weighed, though the count seen may still read 0.
        let counted = try lab.waitFor(ids[held], "held for the bytes the first moved") {
            $0.state == .deferred && ($0.reason ?? "").range(of: #"([6-9]|10)\.\d MB more not counted yet"#, options: .regularExpression) != nil
                || ($0.reason ?? "").range(of: #"waiting: ([6-9]|10)\.\d of 10\.0 MB used on wwan0 today;"#, options: .regularExpression) != nil
        }
        XCTAssertEqual(lab.gets("p\(held + 1).bin").count, 0, "never started: \(counted.reason ?? "")")
        XCTAssertEqual(lab.gets("p\(ran + 1).bin").count, 1, "the one that ran was never stopped")
    }

    func testConstraintOptionsAreChecked() throws {
        lab = try TransferLab()
        try lab.startDaemon()
        let table: [([String], String)] = [
            (["--window", "25:00-06:00"], "--window: \"window\" must be HH:MM-HH:MM"),
            (["--network", "cheap"], "--network: \"network\" must list any, unmetered, not-roaming, within-budget"),
            (["--power", "solar"], "--power: \"power\" must list"),
            (["--not-before", "tomorrow"], "--not-before: \"notBefore\" must be an RFC 3339 time"),
            (["--after-deadline", "fail"], "--after-deadline needs --deadline"),
        ]
        for (options, message) in table {
            let result = try lab.download(["add", lab.url("x.bin"), "--output", lab.out + "/x.bin"] + options)
            XCTAssertEqual(result.status, 64, "\(options): \(result.err)")
            XCTAssertTrue(result.err.contains(message), "\(options): \(result.err)")
        }
    }
}
