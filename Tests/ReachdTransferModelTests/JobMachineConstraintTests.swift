import ReachdModel
import ReachdTransferModel
import XCTest

/// A job's constraints in its machine: a constraint that stops holding pauses the transfer as a metered route
/// does (the partial file stays), the clock's edges wake the job, a deadline that fails the job fails it.
final class JobMachineConstraintTests: XCTestCase {
    typealias F = Fixture

    func machine(_ set: [String: String], total: Int64 = 5000) -> JobMachine {
        var job = F.job()
        job.bytesTotal = total
        for (key, value) in set { XCTAssertNil(job.constraints.set(key, to: value), key) }
        var rules = F.rules
        rules.zone = BerlinLikeZone()
        return JobMachine(job, rules: rules)
    }

    func moment(_ time: Timestamp) -> JobMoment { JobMoment(now: time, monotonic: Double(time.microseconds) / 1e6, jitter: 0) }

    func testAWindowThatClosesMidTransferPausesItAndItResumesWhenTheWindowOpens() {
        var machine = machine(["window": "01:00-06:00"])
        // 01:30 local: inside; the next edge is the window's end, 06:00 local (05:00 UTC).
        _ = machine.handle(.reevaluate(F.unmetered), at: moment(utc(2026, 11, 27, 0, 30)))
        XCTAssertEqual(machine.job.state, .queued)
        XCTAssertEqual(machine.wakeAt, utc(2026, 11, 27, 5, 0))
        _ = machine.handle(.start, at: moment(utc(2026, 11, 27, 0, 31)))
        _ = machine.handle(.progressed(bytes: 3000), at: moment(utc(2026, 11, 27, 4, 0)))
        XCTAssertEqual(machine.handle(.reevaluate(F.unmetered), at: moment(utc(2026, 11, 27, 4, 59))).effects, [], "still inside")
        XCTAssertEqual(machine.handle(.reevaluate(F.unmetered), at: moment(utc(2026, 11, 27, 5, 0))).effects, [.stopAttempt])
        let ended = machine.handle(.attemptEnded(.stopped, partialSize: 3100), at: moment(utc(2026, 11, 27, 5, 0)))
        XCTAssertEqual(ended.effects, [.attemptOver, .reschedule], "the partial file stays")
        XCTAssertEqual(machine.job.state, .deferred)
        XCTAssertEqual(machine.job.bytesMoved, 3100)
        XCTAssertEqual(machine.job.reason, "waiting until 01:00 (window 01:00-06:00)")
        _ = machine.handle(.reevaluate(F.unmetered), at: moment(utc(2026, 11, 27, 5, 1)))
        XCTAssertEqual(machine.job.state, .deferred)
        XCTAssertEqual(machine.wakeAt, utc(2026, 11, 28, 0, 0), "woken when the window opens")
        _ = machine.handle(.reevaluate(F.unmetered), at: moment(utc(2026, 11, 28, 0, 0)))
        XCTAssertEqual(machine.job.state, .queued)
        XCTAssertNil(machine.job.reason)
        XCTAssertEqual(machine.job.bytesMoved, 3100, "it goes on from the partial file")
    }

    func testGoingOnBatteryPausesARunningJobAndACResumesIt() {
        var machine = machine(["power": "on-ac-power"])
        let noon = utc(2026, 11, 26, 12, 0)
        let battery = JobRoute(host: F.host, verdict: F.unmetered.verdict, facts: GateFacts(power: PowerFacts(onBattery: true, batteryPercent: 35)))
        let mains = JobRoute(host: F.host, verdict: F.unmetered.verdict, facts: GateFacts(power: PowerFacts(onBattery: false, batteryPercent: 35)))
        _ = machine.handle(.start, at: moment(noon))
        XCTAssertFalse(machine.allows(total: 5000, route: battery, at: noon))
        XCTAssertEqual(machine.handle(.reevaluate(battery), at: moment(noon)).effects, [.stopAttempt])
        _ = machine.handle(.attemptEnded(.stopped, partialSize: 1200), at: moment(noon))
        XCTAssertEqual(machine.job.state, .deferred)
        XCTAssertEqual(machine.job.reason, "waiting: on battery, 35 %")
        XCTAssertEqual(machine.job.bytesMoved, 1200)
        _ = machine.handle(.reevaluate(battery), at: moment(noon))
        XCTAssertEqual(machine.job.state, .deferred)
        XCTAssertNil(machine.wakeAt, "nothing on the clock: a power change wakes it")
        _ = machine.handle(.reevaluate(mains), at: moment(noon))
        XCTAssertEqual(machine.job.state, .queued)
    }

    func testADeadlineThatFailsTheJob() {
        let noon = utc(2026, 11, 26, 12, 0)
        var waiting = machine(["deadline": "2026-11-26T13:00:00Z", "afterDeadline": "fail", "power": "on-ac-power"])
        let battery = JobRoute(host: F.host, verdict: F.unmetered.verdict, facts: GateFacts(power: PowerFacts(onBattery: true)))
        _ = waiting.handle(.reevaluate(battery), at: moment(noon))
        XCTAssertEqual(waiting.job.state, .deferred)
        XCTAssertEqual(waiting.wakeAt, utc(2026, 11, 26, 13, 0))
        let actions = waiting.handle(.reevaluate(battery), at: moment(utc(2026, 11, 26, 13, 0)))
        XCTAssertEqual(waiting.job.state, .failed)
        XCTAssertEqual(waiting.job.reason, "failed: its deadline (2026-11-26 14:00) passed before it completed")
        XCTAssertEqual(actions.effects, [.unwatchHost])
        XCTAssertNil(waiting.wakeAt)

        // A running one stops, then fails once its attempt is over.
        var running = machine(["deadline": "2026-11-26T13:00:00Z", "afterDeadline": "fail"])
        _ = running.handle(.start, at: moment(noon))
        XCTAssertEqual(running.handle(.reevaluate(F.unmetered), at: moment(utc(2026, 11, 26, 13, 0))).effects, [.stopAttempt])
        _ = running.handle(.attemptEnded(.stopped, partialSize: 10), at: moment(utc(2026, 11, 26, 13, 0)))
        _ = running.handle(.reevaluate(F.unmetered), at: moment(utc(2026, 11, 26, 13, 0)))
        XCTAssertEqual(running.job.state, .failed)
    }

    func testADeadlineThatRelaxesLetsALargeJobUseAMeteredRoute() {
        var machine = machine(["deadline": "2026-11-26T13:00:00Z"])
        _ = machine.handle(.reevaluate(F.metered), at: moment(utc(2026, 11, 26, 12, 0)))
        XCTAssertEqual(machine.job.state, .deferred)
        XCTAssertEqual(machine.wakeAt, utc(2026, 11, 26, 13, 0))
        _ = machine.handle(.reevaluate(F.metered), at: moment(utc(2026, 11, 26, 13, 0)))
        XCTAssertEqual(machine.job.state, .queued)
    }
}
