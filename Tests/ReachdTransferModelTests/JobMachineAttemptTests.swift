import ReachdModel
import ReachdTransferModel
import XCTest

/// Attempts, their outcomes and the gate, as tables of transitions.
final class JobMachineAttemptTests: XCTestCase {
    private typealias F = Fixture

    func testTheGateQueuesOrDefersAWaitingJob() {
        let table: [(JobRoute, Int64?, JobState, String?, [JobAction])] = [
            (F.unmetered, nil, .queued, nil, []),
            (F.unknown, nil, .deferred, "deferred: route to a.test not known yet", []),
            (JobRoute(host: F.host, verdict: F.verdict(reachable: false, metered: false)), nil, .deferred,
             "deferred: a.test is not reachable; waits for a route to it", []),
            (F.metered, 500, .queued, nil, []),
            (F.metered, 5000, .deferred, "deferred: route to a.test is metered (wwan0), 5000 bytes exceed the metered threshold of 1000; "
                + "waits for an unmetered route or --allow-metered", []),
            (F.metered, nil, .deferred, "deferred: the route is metered; asking the server for the size", [.probeSize]),
        ]
        for (route, size, state, reason, effects) in table {
            var job = F.job()
            job.bytesTotal = size
            var machine = F.machine(job)
            let actions = machine.handle(.reevaluate(route), at: F.at(1))
            XCTAssertEqual(machine.job.state, state, "\(route) \(String(describing: size))")
            XCTAssertEqual(machine.job.reason, reason)
            XCTAssertEqual(actions.effects, effects)
        }
    }

    func testTheSizeProbeIsAskedOnceAndDecides() {
        let table: [(Int64?, JobState, Int64?)] = [(500, .queued, 500), (5000, .deferred, 5000), (nil, .deferred, nil)]
        for (answer, state, total) in table {
            var machine = F.machine(F.job())
            XCTAssertEqual(machine.handle(.reevaluate(F.metered), at: F.at(1)).effects, [.probeSize])
            XCTAssertEqual(machine.handle(.reevaluate(F.metered), at: F.at(2)).effects, [], "one probe at a time")
            XCTAssertEqual(machine.handle(.sizeProbed(answer), at: F.at(3)).effects, [.reschedule])
            XCTAssertEqual(machine.sizeQuestion, .answered)
            XCTAssertEqual(machine.handle(.reevaluate(F.metered), at: F.at(4)).effects, [], "asked already: not again")
            XCTAssertEqual(machine.job.state, state, "\(String(describing: answer))")
            XCTAssertEqual(machine.job.bytesTotal, total)
        }
    }

    func testAMeteredSwitchStopsALargeTransferAndDefersIt() {
        var large = F.job()
        large.bytesTotal = 5000
        var machine = F.running(large)
        XCTAssertTrue(machine.allows(total: 5000, route: F.unmetered, at: F.at(2).now))
        XCTAssertFalse(machine.allows(total: 5000, route: F.metered, at: F.at(2).now))
        XCTAssertTrue(machine.allows(total: 500, route: F.metered, at: F.at(2).now))
        XCTAssertEqual(machine.handle(.reevaluate(F.metered), at: F.at(2)).effects, [.stopAttempt])
        XCTAssertEqual(machine.handle(.reevaluate(F.metered), at: F.at(2)).effects, [], "stopped once")
        XCTAssertFalse(machine.allows(total: 500, route: F.unmetered, at: F.at(2).now), "a transfer being stopped may not go on")
        let actions = machine.handle(.attemptEnded(.stopped, partialSize: 700), at: F.at(3))
        XCTAssertEqual(actions.effects, [.attemptOver, .reschedule])
        XCTAssertEqual(machine.job.state, .deferred)
        XCTAssertEqual(machine.job.bytesMoved, 700)
        XCTAssertTrue(machine.job.reason?.hasPrefix("deferred: route to a.test is metered (wwan0)") ?? false)
        _ = machine.handle(.reevaluate(F.unmetered), at: F.at(4))
        XCTAssertEqual(machine.job.state, .queued)

        var small = F.job()
        small.bytesTotal = 500
        var smallMachine = F.running(small)
        XCTAssertEqual(smallMachine.handle(.reevaluate(F.metered), at: F.at(2)).effects, [], "a small transfer goes on")
    }

    func testTheServerAnnouncingTooLargeABodyDefersTheJob() {
        var machine = F.running()
        _ = machine.handle(.attemptEnded(.notAllowed(total: 9000), partialSize: 0), at: F.at(2))
        XCTAssertEqual(machine.job.state, .deferred)
        XCTAssertEqual(machine.job.bytesTotal, 9000)
        XCTAssertEqual(machine.sizeQuestion, .answered)
    }

    /// Backoff with a fixed jitter: base 2 s halved by jitter 0, doubled per attempt; Retry-After wins when longer; 3 attempts.
    func testRetryBacksOffThenFails() {
        let table: [(Double, Double, JobState, Int, Timestamp?, String)] = [
            (10, 0, .deferred, 1, F.at(12).now, "deferred: attempt 1 failed (503); retrying in 1 s"),
            (20, 1, .deferred, 2, F.at(25).now, "deferred: attempt 2 failed (503); retrying in 4 s"),
            (30, 0, .failed, 3, nil, "failed after 3 attempts: 503"),
        ]
        var machine = F.machine(F.job())
        for (second, jitter, state, attempts, retryAt, reason) in table {
            _ = machine.handle(.reevaluate(F.unmetered), at: F.at(second))
            _ = machine.handle(.start, at: F.at(second))
            let actions = machine.handle(.attemptEnded(.retry(reason: "503", retryAfter: nil), partialSize: 0),
                                         at: F.at(second + 1, jitter: jitter))
            XCTAssertEqual(machine.job.state, state, reason)
            XCTAssertEqual(machine.job.attempts, attempts)
            XCTAssertEqual(machine.job.retryAt, retryAt)
            XCTAssertEqual(machine.job.reason, reason)
            XCTAssertTrue(actions.contains(.countRetry))
            XCTAssertEqual(machine.wakeAt, retryAt)
        }
        var waiting = F.running()
        _ = waiting.handle(.attemptEnded(.retry(reason: "429", retryAfter: 30), partialSize: 0), at: F.at(10))
        XCTAssertEqual(waiting.job.retryAt, F.at(40).now, "Retry-After asks for longer")
        _ = waiting.handle(.reevaluate(F.unmetered), at: F.at(39))
        XCTAssertEqual(waiting.job.state, .deferred, "not before its time")
        _ = waiting.handle(.reevaluate(F.unmetered), at: F.at(40))
        XCTAssertEqual(waiting.job.state, .queued)
        XCTAssertNil(waiting.job.retryAt)
    }

    func testProgressStartsTheBackoffAfresh() {
        var job = F.job()
        job.attempts = 2
        var machine = F.running(job)
        _ = machine.handle(.progressed(bytes: 10), at: F.at(2))
        _ = machine.handle(.attemptEnded(.retry(reason: "reset", retryAfter: nil), partialSize: 10), at: F.at(3))
        XCTAssertEqual(machine.job.attempts, 1)
        XCTAssertEqual(machine.job.bytesMoved, 10)
    }

    func testRestartDropsThePartialVersion() {
        let table: [(Int, JobState)] = [(0, .queued), (2, .failed)]
        for (before, state) in table {
            var job = F.job()
            job.attempts = before
            job.changeDownload { $0.partial = Validators(etag: "\"v1\"") }
            var machine = F.running(job)
            _ = machine.handle(.attemptEnded(.restart(reason: "416"), partialSize: 400), at: F.at(2))
            XCTAssertEqual(machine.job.state, state)
            XCTAssertEqual(machine.job.bytesMoved, 0)
            XCTAssertEqual(machine.job.download?.partial, Validators())
        }
    }

    /// The partial file goes first; until it is gone the attempt holds the job's slot and the job shows running,
    /// so a resume or refresh meanwhile cannot start it again over the file being removed.
    func testAFailedDownloadDropsItsPartialFile() {
        var machine = F.running()
        XCTAssertEqual(machine.handle(.attemptEnded(.failed(reason: "failed: 404"), partialSize: 0), at: F.at(2)), [.removePartial])
        XCTAssertEqual(machine.job.state, .running)
        XCTAssertEqual(machine.handle(.start, at: F.at(2)), [], "started again while its partial file is being removed")
        XCTAssertTrue(machine.life.holdsSlot)
        let actions = machine.handle(.partialRemoved, at: F.at(3))
        XCTAssertEqual(actions.effects, [.attemptOver, .unwatchHost, .reschedule])
        XCTAssertEqual(machine.job.state, .failed)
        XCTAssertEqual(machine.job.reason, "failed: 404")
        XCTAssertFalse(machine.life.holdsSlot)
        XCTAssertEqual(machine.handle(.partialRemoved, at: F.at(4)), [], "a removal outside an attempt concludes nothing")
    }

    /// A 200 from byte 0 and a 206 resuming at 200 both end in the file moved into place.
    func testADownloadCompletes() {
        for offset: Int64 in [0, 200] {
            var machine = F.running()
            let validators = Validators(etag: "\"v2\"")
            _ = machine.handle(.attemptStarted(offset: offset, total: 1000, validators: validators), at: F.at(2))
            XCTAssertEqual(machine.job.bytesMoved, offset)
            XCTAssertEqual(machine.job.bytesTotal, 1000)
            XCTAssertEqual(machine.handle(.attemptEnded(.complete(total: 1000), partialSize: 1000), at: F.at(3)), [.moveIntoPlace])
            XCTAssertEqual(machine.job.state, .running, "until the file is in place")
            let actions = machine.handle(.movedIntoPlace(nil), at: F.at(4))
            XCTAssertEqual(actions.effects, [.attemptOver, .unwatchHost, .reschedule])
            XCTAssertEqual(machine.job.state, .completed)
            XCTAssertEqual(machine.job.download?.installed, validators)
            XCTAssertEqual(machine.job.download?.lastChecked, F.at(4).now)
            XCTAssertNil(machine.job.download?.nextCheck)
            XCTAssertFalse(machine.life.holdsSlot)
        }
    }

    func testTheDigestDecides() {
        let expected = "ab"
        let table: [(Result<String, JobFailure>, JobState, String?, [JobAction])] = [
            (.success("ab"), .running, nil, [.moveIntoPlace]),
            (.success("cd"), .failed, "failed: SHA-256 mismatch: expected ab, got cd; the download was discarded",
             [.attemptOver, .unwatchHost, .reschedule]),
            (.failure(JobFailure("unreadable")), .failed, "failed: unreadable", [.attemptOver, .unwatchHost, .reschedule]),
        ]
        for (digest, state, reason, effects) in table {
            var machine = F.running(F.job(sha256: expected))
            XCTAssertEqual(machine.handle(.attemptEnded(.complete(total: 10), partialSize: 10), at: F.at(2)), [.verifyDigest])
            var actions = machine.handle(.digestComputed(digest), at: F.at(3))
            if actions == [.removePartial] { actions = machine.handle(.partialRemoved, at: F.at(3)) }
            XCTAssertEqual(actions.effects, effects)
            XCTAssertEqual(machine.job.state, state)
            XCTAssertEqual(machine.job.reason, reason)
        }
    }

    func testAFailedMoveDropsThePartialFile() {
        var machine = F.running()
        _ = machine.handle(.attemptEnded(.complete(total: 10), partialSize: 10), at: F.at(2))
        XCTAssertEqual(machine.handle(.movedIntoPlace(JobFailure("EACCES")), at: F.at(3)), [.removePartial])
        let actions = machine.handle(.partialRemoved, at: F.at(3))
        XCTAssertEqual(actions.effects, [.attemptOver, .unwatchHost, .reschedule])
        XCTAssertEqual(machine.job.reason, "failed: EACCES")
    }

    /// A refresh check is due at its time; a 304 keeps the file, a 200 replaces it, a failure keeps it too.
    func testRefreshChecks() {
        var machine = F.completedRefreshing()
        XCTAssertEqual(machine.job.download?.nextCheck, F.at(70).now)
        XCTAssertEqual(machine.wakeAt, F.at(70).now)
        _ = machine.handle(.reevaluate(F.metered), at: F.at(69))
        XCTAssertEqual(machine.job.state, .completed)
        let due = machine.handle(.reevaluate(F.metered), at: F.at(70))
        XCTAssertEqual(due.compactMap { if case .persist(let job) = $0 { job.reason } else { nil } }, ["refresh check due", nil])
        XCTAssertEqual(machine.job.state, .queued, "a refresh check is its own size probe")
        XCTAssertEqual(machine.job.bytesTotal, nil)

        let table: [([JobEvent], [JobAction], String?, Timestamp?)] = [
            ([.attemptEnded(.notModified, partialSize: 0), .outputMeasured(500)],
             [.countRefresh(.notModified), .attemptOver, .reschedule], nil, F.at(80).now),
            ([.attemptEnded(.complete(total: 800), partialSize: 800), .movedIntoPlace(nil)],
             [.countRefresh(.changed), .attemptOver, .reschedule], nil, F.at(80).now),
            ([.attemptEnded(.failed(reason: "failed: 404"), partialSize: 0), .partialRemoved],
             [.countRefresh(.failed), .attemptOver, .reschedule],
             "refresh failed (failed: 404); the file in place is kept", F.at(80).now),
        ]
        for (events, effects, reason, lastChecked) in table {
            var check = machine
            _ = check.handle(.start, at: F.at(71))
            var actions: [JobAction] = []
            for event in events { actions = check.handle(event, at: F.at(80)) }
            XCTAssertEqual(actions.effects, effects, "\(events)")
            XCTAssertEqual(check.job.state, .completed)
            XCTAssertEqual(check.job.reason, reason)
            XCTAssertEqual(check.job.download?.lastChecked, lastChecked)
            XCTAssertEqual(check.job.download?.nextCheck, F.at(140).now)
        }
    }

    func testAnUploadSendsItsFileWhole() {
        var machine = F.running(F.job(upload: true))
        _ = machine.handle(.uploadOpened(size: 40), at: F.at(2))
        _ = machine.handle(.progressed(bytes: 30), at: F.at(3))
        var retried = machine
        _ = retried.handle(.attemptEnded(.retry(reason: "reset", retryAfter: nil), partialSize: 0), at: F.at(4))
        XCTAssertEqual(retried.job.bytesMoved, 0, "an upload starts again from its first byte")
        let actions = machine.handle(.attemptEnded(.uploaded(status: 201, body: "ok"), partialSize: 0), at: F.at(4))
        XCTAssertEqual(actions.effects, [.attemptOver, .unwatchHost, .reschedule])
        XCTAssertEqual(machine.job.state, .completed)
        XCTAssertEqual(machine.job.bytesMoved, 40)
        XCTAssertEqual(machine.job.upload?.answer?.status, 201)
        XCTAssertEqual(machine.job.upload?.answer?.body, "ok")
    }

    /// Progress is stored at checkpoints (100 bytes or 1 s) and told to watchers at most every 0.25 s; the rate is
    /// measured between progresses at least 0.25 s apart.
    func testProgressIsPaced() {
        var machine = F.running()
        func paced(_ job: Job, _ rate: Int64) -> Job {
            var job = job
            job.pace = JobPace(bytesPerSecond: rate, yielding: false)
            return job
        }
        let table: [(Double, Int64, [JobAction])] = [
            (1.1, 50, [.countTransferred(bytes: 50, upload: false)]),
            (1.5, 60, [.countTransferred(bytes: 10, upload: false), .notify(paced(machine.job.with(bytes: 60), 25))]),
            (1.6, 70, [.countTransferred(bytes: 10, upload: false)]),
            (2.1, 80, [.countTransferred(bytes: 10, upload: false), .persist(paced(machine.job.with(bytes: 80, updated: 2.1), 33)),
                       .notify(paced(machine.job.with(bytes: 80, updated: 2.1), 33))]),
            (2.2, 200, [.countTransferred(bytes: 120, upload: false), .persist(paced(machine.job.with(bytes: 200, updated: 2.2), 33)),
                        .notify(paced(machine.job.with(bytes: 200, updated: 2.2), 33))]),
        ]
        for (second, bytes, actions) in table {
            XCTAssertEqual(machine.handle(.progressed(bytes: bytes), at: F.at(second)), actions, "\(second)")
            XCTAssertEqual(machine.job.bytesMoved, bytes)
        }
    }

    /// All of a job's bookkeeping lives in its machine and ends with its attempt: nothing of an attempt
    /// (progress seen, stop intent, checkpoint) outlives it, so a forgotten job leaves nothing behind
    /// (the scheduler's `progressedThisAttempt` kept the ids of forgotten jobs).
    func testNothingOfAnAttemptOutlivesIt() {
        var machine = F.running()
        _ = machine.handle(.progressed(bytes: 500), at: F.at(2))
        XCTAssertEqual(machine.life.transfer?.progressed, true)
        _ = machine.handle(.attemptEnded(.failed(reason: "failed: 404"), partialSize: 0), at: F.at(3))
        _ = machine.handle(.partialRemoved, at: F.at(3))
        XCTAssertFalse(machine.life.holdsSlot)
        XCTAssertTrue(machine.isFinished)

        // A pause while the digest is computed: the intent goes with the attempt, the next one runs free.
        var checked = F.running(F.job(sha256: "ab"))
        _ = checked.handle(.attemptEnded(.complete(total: 10), partialSize: 10), at: F.at(2))
        XCTAssertEqual(checked.handle(.pause, at: F.at(3)).effects, [.stopAttempt])
        _ = checked.handle(.digestComputed(.failure(JobFailure("gone"))), at: F.at(4))
        XCTAssertFalse(checked.life.holdsSlot)
        _ = checked.handle(.resume, at: F.at(5))
        _ = checked.handle(.start, at: F.at(6))
        XCTAssertTrue(checked.allows(total: 10, route: F.unmetered, at: F.at(20).now))
        XCTAssertEqual(checked.life.transfer?.progressed, false)
    }

    /// Paused and resumed while the digest is computed: queued again, but not started until that attempt is over.
    func testAJobStillFinishingIsNotStartedAgain() {
        var machine = F.running(F.job(sha256: "ab"))
        _ = machine.handle(.attemptEnded(.complete(total: 10), partialSize: 10), at: F.at(2))
        _ = machine.handle(.pause, at: F.at(3))
        _ = machine.handle(.resume, at: F.at(3))
        XCTAssertEqual(machine.job.state, .queued)
        XCTAssertEqual(machine.handle(.start, at: F.at(4)), [])
        XCTAssertEqual(machine.handle(.digestComputed(.success("ab")), at: F.at(5)), [.moveIntoPlace])
        _ = machine.handle(.movedIntoPlace(nil), at: F.at(6))
        XCTAssertEqual(machine.job.state, .completed)
        XCTAssertFalse(machine.life.holdsSlot)
    }

    func testEventsOutsideTheirPhaseAreIgnored() {
        var idle = F.machine(F.job())
        for event: JobEvent in [.attemptEnded(.stopped, partialSize: 1), .digestComputed(.success("x")), .movedIntoPlace(nil),
                                .outputMeasured(1)] {
            XCTAssertEqual(idle.handle(event, at: F.at(1)), [])
            XCTAssertEqual(idle.job, F.job())
        }
    }
}

extension Job {
    /// This job with `bytes` received, and changed at second `updated` when given.
    func with(bytes: Int64, updated: Double? = nil) -> Job {
        var job = self
        job.bytesMoved = bytes
        if let updated { job.updated = Fixture.at(updated).now }
        return job
    }
}
