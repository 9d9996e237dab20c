import Foundation
import Logging
import ReachdModel
import ReachdProtocol
@testable import ReachdTransfers
import ReachdTransferModel
import XCTest

/// Every host has the same verdict: unreachable (jobs wait, nothing goes to the network) or reachable over a wired,
/// unmetered link (jobs start at once).
private final class FixedHosts: HostVerdicts {
    private let reachable: Bool

    init(reachable: Bool) { self.reachable = reachable }

    func setObserver(_ observer: @escaping @Sendable ([StampedVerdict]) -> Void) {}

    func verdict(for host: String) async -> StampedVerdict {
        let wired = FamilyVerdict(reachable: true, status: .wired, flags: [.reachable], interface: "eth0")
        let verdict = reachable
            ? Verdict(target: host, reachable: true, status: .wired, metered: false, meteredReason: nil, interface: "eth0",
                      flags: [.reachable], reason: nil, family: .ipv4, ipv4: wired, ipv6: .unreachable(.noAddress, ""))
            : Verdict(target: host, reachable: false, status: .unreachable, metered: false, meteredReason: nil, interface: nil,
                      flags: [], reason: nil, family: .ipv4, ipv4: .unreachable(.noRoute, ""), ipv6: .unreachable(.noRoute, ""))
        return StampedVerdict(verdict: verdict, sequence: 1, timestamp: Timestamp(microseconds: 0))
    }

    func watch(_ hosts: [String]) async -> [StampedVerdict] {
        var verdicts: [StampedVerdict] = []
        for host in hosts { verdicts.append(await verdict(for: host)) }
        return verdicts
    }

    func unwatch(_ hosts: [String]) {}
}

/// A TCP port on 127.0.0.1 whose connections the kernel accepts and nobody answers: a transfer there runs until stopped.
private final class SilentServer {
    let port: UInt16
    private let fd: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(fd) }
}

/// The scheduler actor carrying out its job machines' actions: the store, the partial files, watchers.
final class TransferSchedulerTests: XCTestCase {
    private var directory = ""
    private let owner = Owner(uid: 0, gid: 0)

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "scheduler-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/state", withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `body` with a loaded scheduler over the test's store, then stops it and its file and HTTP threads.
    private func withScheduler(hosts: any HostVerdicts = FixedHosts(reachable: false), settings: TransferScheduler.Settings = .init(),
                               _ body: (TransferScheduler, JobStore) async throws -> Void) async throws {
        let store = try JobStore(directory: directory + "/state")
        let files = UserFiles(guarded: [directory + "/state"])
        let fetcher = Fetcher(caFile: nil, readTimeout: 5, logger: Logger(label: "test"))
        let scheduler = TransferScheduler(store: store, files: files, fetcher: fetcher, hosts: hosts,
                                          settings: settings, logger: Logger(label: "test"))
        do {
            try await scheduler.load()
            try await body(scheduler, store)
        } catch {
            XCTFail("\(error)")
        }
        await scheduler.stopAll()
        await fetcher.shutdown()
        files.shutdown()
    }

    /// The first job a watcher sees that matches `condition`, or nil after 10 s.
    private func first(_ scheduler: TransferScheduler, _ condition: @escaping @Sendable (Job) -> Bool) async throws -> Job? {
        let (events, sink) = AsyncStream.makeStream(of: Job.self)
        let (token, now) = try await scheduler.addWatcher(owner: owner, job: nil) { sink.yield($0) }
        for job in now { sink.yield(job) }
        let deadline = Task {
            try? await Task.sleep(for: .seconds(10))
            sink.finish()
        }
        defer { deadline.cancel() }
        for await job in events where condition(job) {
            await scheduler.removeWatcher(token)
            return job
        }
        await scheduler.removeWatcher(token)
        return nil
    }

    func testTheOwnersOperationsThenTheJobIsForgottenWhole() async throws {
        try await withScheduler { scheduler, _ in
            let output = directory + "/f.bin"
            let added = try await scheduler.add(DownloadSpec(url: "http://a.test/f.bin", output: output), owner: owner)
            XCTAssertTrue(FileManager.default.fileExists(atPath: added.partialPath))
            let waiting = try await first(scheduler) { $0.state == .deferred && ($0.reason ?? "").contains("not reachable") }
            XCTAssertEqual(waiting?.reason, "deferred: a.test is not reachable; waits for a route to it")

            let paused = try await scheduler.pause(added.id, owner: owner)
            XCTAssertEqual(paused.state, .paused)
            let resumed = try await scheduler.resume(added.id, owner: owner)
            XCTAssertEqual(resumed.state, .deferred, "resumed, and the gate holds it back again")
            do {
                _ = try await scheduler.remove(added.id, owner: owner)
                XCTFail("an unfinished job is not removed")
            } catch let error as ProtocolError {
                XCTAssertEqual(error.code, .conflict)
            }

            let cancelled = try await scheduler.cancel(added.id, owner: owner)
            XCTAssertEqual(cancelled.state, .cancelled)
            XCTAssertFalse(FileManager.default.fileExists(atPath: added.partialPath), "a cancelled job leaves no partial file")
            _ = try await scheduler.remove(added.id, owner: owner)
            let left = await scheduler.list(owner: owner)
            XCTAssertEqual(left, [])
            let counts = await scheduler.stateCounts()
            XCTAssertEqual(counts, [:])
        }
        try await withScheduler { scheduler, _ in
            let stored = await scheduler.list(owner: owner)
            XCTAssertEqual(stored, [], "removed from the store too")
        }
    }

    /// After a kill -9: the job that was running is queued again from what its partial file holds.
    func testARunningJobIsTakenUpFromItsPartialFileOnLoad() async throws {
        var job = Job(id: "0123456789abcdef", sequence: 7, spec: DownloadSpec(url: "http://a.test/g.bin", output: directory + "/g.bin"),
                      owner: owner, created: .now())
        job.state = .running
        job.bytesMoved = 999
        job.changeDownload { $0.partial = Validators(etag: "\"v1\"") }
        try JobStore(directory: directory + "/state").save(job)
        XCTAssertTrue(FileManager.default.createFile(atPath: job.partialPath, contents: Data(count: 300)))
        try await withScheduler { scheduler, _ in
            let loaded = try await scheduler.show(job.id, owner: owner)
            XCTAssertEqual(loaded.state, .deferred)
            XCTAssertEqual(loaded.bytesMoved, 300)
            XCTAssertEqual(loaded.download?.partial.etag, "\"v1\"")
            let next = try await scheduler.add(DownloadSpec(url: "http://a.test/h.bin", output: directory + "/h.bin"), owner: owner)
            XCTAssertEqual(next.sequence, 8, "new jobs queue after the stored ones")
        }
    }

    /// A row that is no job (an upload kept fresh) does not stop the daemon's start: it stays in the table, unloaded,
    /// and the other jobs load; a new job queues after every row.
    func testARowThatIsNoJobIsLeftAndTheOthersLoad() async throws {
        let store = try JobStore(directory: directory + "/state")
        let upload = Job(id: "00000000000000aa", sequence: 3, upload: UploadSpec(file: directory + "/in.bin", url: "http://up.test/in"),
                         owner: owner, created: .now())
        let download = Job(id: "00000000000000bb", sequence: 2, spec: DownloadSpec(url: "http://a.test/g.bin", output: directory + "/g.bin"),
                           owner: owner, created: .now())
        try store.save(upload)
        try store.save(download)
        try await store.database.write { try $0.execute(sql: "UPDATE job SET refreshSeconds = 60 WHERE id = '00000000000000aa'") }
        try await withScheduler { scheduler, store in
            let loaded = try await scheduler.show(download.id, owner: owner)
            XCTAssertEqual(loaded.id, download.id)
            XCTAssertEqual(try store.all().refused.count, 1, "the row is still in the table")
            let next = try await scheduler.add(DownloadSpec(url: "http://a.test/h.bin", output: directory + "/h.bin"), owner: owner)
            XCTAssertEqual(next.sequence, 4, "new jobs queue after every row, the refused one too")
        }
    }

    /// A power change reaches every job's gate: on battery a job that asks for AC power waits (a running one is
    /// stopped), on AC it runs; its constraints are kept in the store.
    func testPowerChangesStopAndStartAJobThatAsksForACPower() async throws {
        let server = try SilentServer()
        var spec = DownloadSpec(url: "http://127.0.0.1:\(server.port)/a", output: directory + "/a")
        XCTAssertNil(spec.constraints.set("power", to: "on-ac-power"))
        try await withScheduler(hosts: FixedHosts(reachable: true)) { scheduler, store in
            await scheduler.powerChanged(PowerFacts(onBattery: true, batteryPercent: 35))
            let added = try await scheduler.add(spec, owner: owner)
            let waiting = try await first(scheduler) { $0.id == added.id && $0.state == .deferred && $0.reason == "waiting: on battery, 35 %" }
            XCTAssertNotNil(waiting, "it waits on battery, once its host's verdict is in")
            XCTAssertEqual(try store.all().jobs.first?.constraints, spec.constraints, "kept in the store")
            await scheduler.powerChanged(PowerFacts(onBattery: false, batteryPercent: 35))
            let running = try await first(scheduler) { $0.id == added.id && $0.state == .running }
            XCTAssertNotNil(running, "on AC it runs")
            await scheduler.powerChanged(PowerFacts(onBattery: true, batteryPercent: 34))
            let stopped = try await first(scheduler) { $0.id == added.id && $0.state == .deferred && $0.reason == "waiting: on battery, 34 %" }
            XCTAssertNotNil(stopped, "back on battery, the running transfer is stopped")
        }
    }

    /// Stopping the service stops what runs and starts nothing new: the queued job does not take the slot the
    /// stopped one frees, and no transfer is left running after `stopAll`.
    func testStoppingStartsNothingNew() async throws {
        let server = try SilentServer()
        var settings = TransferScheduler.Settings()
        settings.concurrency = 1
        try await withScheduler(hosts: FixedHosts(reachable: true), settings: settings) { scheduler, _ in
            let first = try await scheduler.add(DownloadSpec(url: "http://127.0.0.1:\(server.port)/a", output: directory + "/a"), owner: owner)
            let second = try await scheduler.add(DownloadSpec(url: "http://127.0.0.1:\(server.port)/b", output: directory + "/b"), owner: owner)
            let running = try await self.first(scheduler) { $0.id == first.id && $0.state == .running }
            XCTAssertNotNil(running, "the first job starts")
            await scheduler.stopAll()
            let left = await scheduler.running.keys.sorted()
            XCTAssertEqual(left, [], "a transfer started during the shutdown")
            let queued = try await scheduler.show(second.id, owner: owner)
            XCTAssertNotEqual(queued.state, .running)
        }
    }
}
