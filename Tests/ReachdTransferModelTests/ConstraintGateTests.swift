import ReachdModel
import ReachdTransferModel
import XCTest

/// Central European time with its 2026 changes: +1 h, +2 h from 2026-03-29 01:00 UTC, +1 h again from
/// 2026-10-25 01:00 UTC. A fixed rule, so the tests do not depend on the host's zone.
struct BerlinLikeZone: LocalTimeZone {
    static let springForward = utc(2026, 3, 29, 1, 0)
    static let fallBack = utc(2026, 10, 25, 1, 0)

    func offsetSeconds(at time: Timestamp) -> Int {
        time >= Self.springForward && time < Self.fallBack ? 7200 : 3600
    }
}

/// The instant of a UTC date and time.
func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int) -> Timestamp {
    let days = Int64(LocalDate(year: year, month: month, day: day)!.daysSinceEpoch)
    return Timestamp(microseconds: (days * 86_400 + Int64(hour * 3600 + minute * 60)) * 1_000_000)
}

final class ConstraintGateTests: XCTestCase {
    typealias F = Fixture
    let zone = BerlinLikeZone()
    let gate = TransferGate(meteredThreshold: 1000)

    func job(_ set: [String: String], total: Int64? = 5000, received: Int64 = 0, upload: Bool = false) -> Job {
        var job = F.job(upload: upload)
        job.bytesTotal = total
        job.bytesMoved = received
        for (key, value) in set { XCTAssertNil(job.constraints.set(key, to: value), key) }
        return job
    }

    func route(metered: Bool = false, reachable: Bool = true, facts: GateFacts = GateFacts(), budget: BudgetStatus? = nil) -> JobRoute {
        var verdict = F.verdict(reachable: reachable, metered: metered)
        verdict.budget = budget
        return JobRoute(host: F.host, verdict: verdict, facts: facts)
    }

    func decide(_ job: Job, _ route: JobRoute, at now: Timestamp = utc(2026, 11, 26, 12, 0), sizeChecked: Bool = true) -> TransferGate.Decision {
        gate.decide(job: job, route: route, size: job.bytesTotal, sizeChecked: sizeChecked, now: now, zone: zone)
    }

    func testTheDefaultIsTheMeteredRule() {
        XCTAssertEqual(decide(job([:]), route()), .run)
        guard case .wait(let reason) = decide(job([:]), route(metered: true)) else { return XCTFail("a large job waits on a metered route") }
        XCTAssertTrue(reason.hasPrefix("deferred: route to a.test is metered (wwan0), 5000 bytes exceed"), reason)
        XCTAssertEqual(decide(job([:], total: 500), route(metered: true)), .run, "a small one runs")
        XCTAssertEqual(decide(job([:], total: nil), route(metered: true), sizeChecked: false), .needSize)
    }

    func testNetworkConstraints() {
        let roaming = GateFacts(roaming: RoamingFact(roaming: true, link: "wwan0", source: "ModemManager"))
        let home = GateFacts(roaming: RoamingFact(roaming: false, link: "wwan0", source: "ModemManager"))
        let month = BudgetStatus(state: .approaching, usedBytes: 4_600_000_000, limitBytes: 5_000_000_000, period: "month", resetsAt: utc(2026, 12, 1, 0, 0))
        let over = BudgetStatus(state: .over, usedBytes: 5_100_000_000, limitBytes: 5_000_000_000, period: "day", resetsAt: utc(2026, 11, 27, 0, 0))
        let table: [(String, Job, JobRoute, TransferGate.Decision)] = [
            ("any: a large job on a metered route", job(["network": "any"]), route(metered: true), .run),
            ("unmetered: a small job waits too", job(["network": "unmetered"], total: 10), route(metered: true),
             .wait(reason: "waiting: route to a.test is metered (wwan0); the job asks for an unmetered one")),
            ("unmetered on an unmetered route", job(["network": "unmetered"]), route(), .run),
            ("not-roaming while roaming", job(["network": "not-roaming"]), route(metered: true, facts: roaming),
             .wait(reason: "waiting: roaming on wwan0 (ModemManager)")),
            ("not-roaming at home, metered allowed", job(["network": "not-roaming"]), route(metered: true, facts: home), .run),
            ("not-roaming, roaming not known", job(["network": "not-roaming"]), route(metered: true), .run),
            ("within-budget: does not fit", job(["network": "within-budget"], total: 1_000_000_000), route(metered: true, budget: month),
             .wait(reason: "waiting: 4.6 of 5.0 GB used on wwan0 this month; the job needs 1.0 GB more")),
            ("within-budget: fits", job(["network": "within-budget"], total: 300_000_000), route(metered: true, budget: month), .run),
            ("within-budget: an upload that does not fit waits before it starts", job(["network": "within-budget"], total: 1_000_000_000, upload: true),
             route(metered: true, budget: month), .wait(reason: "waiting: 4.6 of 5.0 GB used on wwan0 this month; the job needs 1.0 GB more")),
            ("within-budget: what is left of a partial file fits", job(["network": "within-budget"], total: 1_000_000_000, received: 700_000_000),
             route(metered: true, budget: month), .run),
            ("within-budget: over", job(["network": "within-budget"], total: 10), route(metered: true, budget: over),
             .wait(reason: "waiting: 5.1 of 5.0 GB used on wwan0 today")),
            ("within-budget: no budget known on a metered link, the metered rule", job(["network": "within-budget"]), route(metered: true),
             .wait(reason: "deferred: route to a.test is metered (wwan0), 5000 bytes exceed the metered threshold of 1000; waits for an unmetered route or --allow-metered")),
            ("within-budget: no budget known on an unmetered link", job(["network": "within-budget"]), route(), .run),
            ("within-budget and any: no budget known", job(["network": "within-budget,any"]), route(metered: true), .run),
            ("not-roaming and within-budget: both hold", job(["network": "not-roaming,within-budget"], total: 1_000_000_000),
             route(metered: true, facts: home, budget: month), .wait(reason: "waiting: 4.6 of 5.0 GB used on wwan0 this month; the job needs 1.0 GB more")),
        ]
        for (name, job, route, expected) in table { XCTAssertEqual(decide(job, route), expected, name) }
        // 400 MB left: 300 MB fits alone, not beside 200 MB promised to running jobs.
        var promised = GateFacts()
        promised.budgetReserved = 200_000_000
        XCTAssertEqual(decide(job(["network": "within-budget"], total: 300_000_000), route(metered: true, facts: promised, budget: month)),
                       .wait(reason: "waiting: 4.6 of 5.0 GB used on wwan0 this month, 0.2 GB more not counted yet (moved, or promised to running jobs); the job needs 0.3 GB more"))
        promised.budgetReserved = 100_000_000
        XCTAssertEqual(decide(job(["network": "within-budget"], total: 300_000_000), route(metered: true, facts: promised, budget: month)), .run)
        XCTAssertEqual(decide(job(["network": "within-budget"], total: nil), route(metered: true, budget: month), sizeChecked: false), .needSize)
        XCTAssertEqual(decide(job(["network": "within-budget"], total: nil), route(metered: true, budget: month)),
                       .wait(reason: "waiting: size unknown, so it may not fit the budget; 4.6 of 5.0 GB used on wwan0 this month"))
    }

    /// The scheduler's roaming fact is what the route's verdict says of its link (issue 33: reachd's roaming).
    func testTheRoamingFactComesFromTheVerdict() {
        var verdict = F.verdict(metered: true)
        XCTAssertEqual(RoamingFact(verdict: verdict), RoamingFact(roaming: false, link: "wwan0", source: ""))
        verdict.roamingSource = .modemManager
        XCTAssertEqual(RoamingFact(verdict: verdict), RoamingFact(roaming: true, link: "wwan0", source: "ModemManager"))
        XCTAssertEqual(decide(job(["network": "not-roaming"]), JobRoute(host: F.host, verdict: verdict, facts: GateFacts(roaming: RoamingFact(verdict: verdict)))),
                       .wait(reason: "waiting: roaming on wwan0 (ModemManager)"))
        verdict.interface = nil
        XCTAssertNil(RoamingFact(verdict: verdict), "no link, nothing to say")
        XCTAssertNil(RoamingFact(verdict: nil))
    }

    func testPowerConstraints() {
        func power(_ onBattery: Bool?, _ percent: Double? = nil, level: UInt32? = nil, profile: String? = nil) -> JobRoute {
            route(facts: GateFacts(power: PowerFacts(onBattery: onBattery, batteryPercent: percent, warningLevel: level, profile: profile)))
        }
        let table: [(String, String, JobRoute, TransferGate.Decision)] = [
            ("on battery", "on-ac-power", power(true, 35.2), .wait(reason: "waiting: on battery, 35 %")),
            ("on AC", "on-ac-power", power(false, 35), .run),
            ("no UPower", "on-ac-power", power(nil), .run),
            ("battery low by share", "battery-not-low", power(true, 12), .wait(reason: "waiting: battery low, 12 %")),
            ("battery low by UPower's warning", "battery-not-low", power(true, 50, level: 3), .wait(reason: "waiting: battery low, 50 %")),
            ("battery fine", "battery-not-low", power(true, 50, level: 1), .run),
            ("charging at 5 %", "battery-not-low", power(false, 5, level: 1), .run),
            ("no battery", "battery-not-low", power(false), .run),
            ("power-saver", "not-power-saver", power(false, profile: "power-saver"), .wait(reason: "waiting: power profile is power-saver")),
            ("balanced", "not-power-saver", power(false, profile: "balanced"), .run),
            ("no power-profiles-daemon", "not-power-saver", power(true, 10), .run),
        ]
        for (name, asked, route, expected) in table { XCTAssertEqual(decide(job(["power": asked]), route), expected, name) }
    }

    func testStorageAsksForWhatIsLeftPlusAMargin() {
        let margin = TransferGate.storageMarginBytes
        func free(_ bytes: Int64?) -> JobRoute { route(facts: GateFacts(freeBytes: bytes)) }
        let large = job(["storageNotLow": "true"], total: 50_000_000)
        XCTAssertEqual(decide(large, free(50_000_000 + margin)), .run)
        XCTAssertEqual(decide(large, free(50_000_000 + margin - 1)),
                       .wait(reason: "waiting: 117.1 MB free at the destination, the job needs 50.0 MB more and leaves 67.1 MB"))
        XCTAssertEqual(decide(job(["storageNotLow": "true"], total: 50_000_000, received: 40_000_000), free(10_000_000 + margin)), .run,
                       "the partial file's bytes are on the disk already")
        XCTAssertEqual(decide(large, free(nil)), .run, "free space not known")
        XCTAssertEqual(decide(job(["storageNotLow": "true"], total: nil), free(1 << 40), sizeChecked: false), .needSize, "the size is asked first")
        XCTAssertEqual(decide(job(["storageNotLow": "true"], total: nil), free(margin)), .run, "a size the server does not tell counts as none")
        XCTAssertEqual(decide(job(["storageNotLow": "true"], upload: true), free(0)), .run, "an upload writes nothing")
        XCTAssertEqual(decide(job([:]), free(0)), .run, "not asked")
    }

    /// A destination being read holds the jobs that ask for its free space; one that does not answer (a look, or a write
    /// stuck there) holds every download there, `now` too, and no upload.
    func testADestinationBeingReadHoldsJobsThatAskForFreeSpaceAndOneNotAnsweringEveryDownload() {
        let asking = job(["storageNotLow": "true"])
        XCTAssertEqual(decide(asking, route(facts: GateFacts(destination: .reading))), .wait(reason: "waiting: reading the free space at the destination"))
        XCTAssertEqual(decide(asking, route(facts: GateFacts(destination: .notAnswering("/mnt/nfs")))),
                       .wait(reason: "waiting: the file system of /mnt/nfs does not answer"))
        XCTAssertEqual(decide(job([:]), route(facts: GateFacts(destination: .reading))), .run)
        for asked in [[:], ["now": "true"]] {
            XCTAssertEqual(decide(job(asked), route(facts: GateFacts(destination: .notAnswering("/mnt/nfs")))),
                           .wait(reason: "waiting: the file system of /mnt/nfs does not answer"), "\(asked)")
        }
        XCTAssertEqual(decide(job([:], upload: true), route(facts: GateFacts(destination: .notAnswering("/mnt/nfs")))), .run)
        XCTAssertEqual(decide(job(["storageNotLow": "true"], upload: true), route(facts: GateFacts(destination: .reading))), .run)
    }

    /// A clock behind the job table's last change holds jobs with times only, and `--now` not at all.
    func testAClockNotSetYetHoldsJobsWithTimes() {
        let behind = route(facts: GateFacts(clockBehind: utc(2026, 11, 26, 12, 0)))
        let wait = TransferGate.Decision.wait(reason: "waiting: the clock is not set yet (it reads before the job table's last change, 2026-11-26T12:00:00.000000Z)")
        for asked in [["window": "00:00-23:59"], ["notBefore": "2001-01-01T00:00:00Z"], ["deadline": "2099-01-01T00:00:00Z"]] {
            XCTAssertEqual(decide(job(asked), behind, at: utc(2001, 1, 1, 12, 0)), wait, "\(asked)")
        }
        XCTAssertEqual(decide(job([:]), behind, at: utc(2001, 1, 1, 12, 0)), .run)
        XCTAssertEqual(decide(job(["now": "true", "window": "01:00-02:00"]), behind, at: utc(2001, 1, 1, 12, 0)), .run)

        var trust = ClockTrust(latest: utc(2026, 11, 26, 12, 0))
        XCTAssertEqual(trust.check(now: utc(2001, 1, 1, 0, 0), synchronized: false), utc(2026, 11, 26, 12, 0))
        XCTAssertNil(trust.check(now: utc(2026, 11, 26, 12, 0), synchronized: false), "as late as the table: trusted")
        XCTAssertNil(trust.check(now: utc(2001, 1, 1, 0, 0), synchronized: false), "and stays so")
        var synchronized = ClockTrust(latest: utc(2026, 11, 26, 12, 0))
        XCTAssertNil(synchronized.check(now: utc(2001, 1, 1, 0, 0), synchronized: true))
        var set = ClockTrust(latest: utc(2026, 11, 26, 12, 0))
        set.clockWasSet()
        XCTAssertNil(set.behind)
        XCTAssertNil(ClockTrust(latest: nil).behind, "an empty table: nothing to be behind")
    }

    func testNowSkipsEveryDeferralButNotReachability() {
        let asked = job(["now": "true", "power": "on-ac-power", "window": "01:00-06:00", "network": "unmetered"])
        let battery = GateFacts(power: PowerFacts(onBattery: true, batteryPercent: 20))
        XCTAssertEqual(decide(asked, route(metered: true, facts: battery)), .run)
        XCTAssertEqual(decide(job(["now": "true"]), route(metered: true)), .run, "the metered rule too")
        guard case .wait = decide(asked, route(reachable: false)) else { return XCTFail("no route, no transfer") }
        XCTAssertNil(gate.nextTimeEdge(job: asked, now: utc(2026, 11, 26, 12, 0), zone: zone))
    }

    func testNotBeforeAndDeadline() {
        let noon = utc(2026, 11, 26, 12, 0)
        XCTAssertEqual(decide(job(["notBefore": "2026-11-27T00:00:00Z"]), route(), at: noon), .wait(reason: "waiting until 01:00"))
        XCTAssertEqual(decide(job(["notBefore": "2026-11-28T00:00:00Z"]), route(), at: noon), .wait(reason: "waiting until 2026-11-28 01:00"))
        XCTAssertEqual(decide(job(["notBefore": "2026-11-26T11:00:00Z"]), route(), at: noon), .run)
        // After the deadline, relax lifts the network's cost, not the rest.
        let relax = job(["deadline": "2026-11-26T11:00:00Z", "power": "on-ac-power"])
        XCTAssertEqual(decide(relax, route(metered: true), at: noon), .run)
        XCTAssertEqual(decide(relax, route(metered: true, facts: GateFacts(power: PowerFacts(onBattery: true))), at: noon),
                       .wait(reason: "waiting: on battery"))
        guard case .wait = decide(relax, route(metered: true), at: utc(2026, 11, 26, 10, 0)) else { return XCTFail("before it, the metered rule") }
        XCTAssertEqual(decide(job(["deadline": "2026-11-26T11:00:00Z", "afterDeadline": "fail"]), route(), at: noon),
                       .fail(reason: "failed: its deadline (2026-11-26 12:00) passed before it completed"))
        XCTAssertEqual(gate.nextTimeEdge(job: job(["deadline": "2026-11-26T13:00:00Z", "notBefore": "2026-11-26T12:30:00Z"]), now: noon, zone: zone),
                       utc(2026, 11, 26, 12, 30))
    }

    func testAWindowCrossingMidnight() {
        let night = job(["window": "22:00-06:00"])
        // Local = UTC + 1 h in November.
        let table: [(Timestamp, TransferGate.Decision, Timestamp)] = [
            (utc(2026, 11, 26, 20, 0), .wait(reason: "waiting until 22:00 (window 22:00-06:00)"), utc(2026, 11, 26, 21, 0)),
            (utc(2026, 11, 26, 21, 0), .run, utc(2026, 11, 27, 5, 0)),
            (utc(2026, 11, 26, 23, 30), .run, utc(2026, 11, 27, 5, 0)),
            (utc(2026, 11, 27, 4, 59), .run, utc(2026, 11, 27, 5, 0)),
            (utc(2026, 11, 27, 5, 0), .wait(reason: "waiting until 22:00 (window 22:00-06:00)"), utc(2026, 11, 27, 21, 0)),
        ]
        for (now, expected, edge) in table {
            XCTAssertEqual(decide(night, route(), at: now), expected, "\(now)")
            XCTAssertEqual(gate.nextTimeEdge(job: night, now: now, zone: zone), edge, "\(now)")
        }
    }

    func testAWindowOnTheDaysTheClocksChange() {
        let early = DailyWindow("01:00-06:00")!
        // Spring: 01:00 local is 00:00 UTC (+1 h); 06:00 local is 04:00 UTC (+2 h): four real hours.
        XCTAssertEqual(early.nextEdge(after: utc(2026, 3, 28, 23, 30), zone: zone), utc(2026, 3, 29, 0, 0))
        XCTAssertEqual(early.nextEdge(after: utc(2026, 3, 29, 0, 0), zone: zone), utc(2026, 3, 29, 4, 0))
        XCTAssertTrue(early.contains(utc(2026, 3, 29, 3, 59), zone: zone))
        XCTAssertFalse(early.contains(utc(2026, 3, 29, 4, 0), zone: zone))
        // Autumn: 01:00 local is 23:00 UTC the day before (+2 h); 06:00 local is 05:00 UTC (+1 h): six real hours.
        XCTAssertEqual(early.nextEdge(after: utc(2026, 10, 24, 22, 0), zone: zone), utc(2026, 10, 24, 23, 0))
        XCTAssertEqual(early.nextEdge(after: utc(2026, 10, 24, 23, 0), zone: zone), utc(2026, 10, 25, 5, 0))
        XCTAssertTrue(early.contains(utc(2026, 10, 25, 4, 30), zone: zone))
        // A window that opens in the skipped hour opens when the clock jumps past it.
        XCTAssertEqual(DailyWindow("02:30-04:00")!.nextEdge(after: utc(2026, 3, 28, 23, 0), zone: zone), utc(2026, 3, 29, 1, 0))
        // A window that opens in the repeated hour opens at its first occurrence.
        XCTAssertEqual(DailyWindow("02:30-04:00")!.nextEdge(after: utc(2026, 10, 24, 22, 0), zone: zone), utc(2026, 10, 25, 0, 30))
        XCTAssertEqual(decide(job(["window": "01:00-06:00"]), route(), at: utc(2026, 3, 28, 23, 30)),
                       .wait(reason: "waiting until 01:00 (window 01:00-06:00)"))
    }

    func testConstraintsAreCheckedAsTheyComeIn() {
        var constraints = JobConstraints()
        XCTAssertNotNil(constraints.set("network", to: "cheap"))
        XCTAssertNotNil(constraints.set("power", to: "on-ac-power,"))
        XCTAssertNotNil(constraints.set("window", to: "01:00-01:00"))
        XCTAssertNotNil(constraints.set("window", to: "25:00-06:00"))
        XCTAssertNotNil(constraints.set("window", to: "1:00-06:00"))
        XCTAssertNotNil(constraints.set("notBefore", to: "tomorrow"))
        XCTAssertNotNil(constraints.set("afterDeadline", to: "maybe"))
        XCTAssertNotNil(constraints.set("now", to: "yes"))
        XCTAssertNotNil(constraints.set("colour", to: "blue"))
        XCTAssertNotNil(constraints.set("network", to: String(repeating: "any,", count: 100)))
        XCTAssertEqual(constraints, JobConstraints(), "a refusal changes nothing")
        XCTAssertNil(constraints.set("window", to: "22:00-24:00"))
        XCTAssertEqual(constraints.window, DailyWindow(startMinute: 22 * 60, endMinute: 0))
        XCTAssertNil(constraints.set("network", to: "within-budget, not-roaming"))
        XCTAssertEqual(constraints.summary, "network=not-roaming,within-budget window=22:00-00:00")
    }
}
