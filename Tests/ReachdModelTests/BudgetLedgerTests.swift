import Foundation
import ReachdModel
import XCTest

/// A time zone with one offset change (Europe/Berlin's rules around `switchAt`), for DST tests.
struct ShiftCalendar: LocalCalendar {
    var before: Int64
    var after: Int64
    var switchAt: Timestamp

    /// Berlin in autumn 2026: CEST (+2) until 2026-10-25T01:00Z, then CET (+1).
    static let berlinAutumn = ShiftCalendar(before: 7200, after: 3600, switchAt: time("2026-10-25T01:00:00Z"))
    /// Berlin in spring 2026: CET (+1) until 2026-03-29T01:00Z, then CEST (+2).
    static let berlinSpring = ShiftCalendar(before: 3600, after: 7200, switchAt: time("2026-03-29T01:00:00Z"))

    func date(at time: Timestamp) -> LocalDate {
        let seconds = time.microseconds / 1_000_000 + (time < switchAt ? before : after)
        return LocalDate(daysSinceEpoch: Int((seconds - (seconds < 0 ? 86_399 : 0)) / 86_400))
    }

    func startOfDay(_ date: LocalDate) -> Timestamp {
        let local = Int64(date.daysSinceEpoch) * 86_400
        let early = Timestamp(microseconds: (local - before) * 1_000_000)
        return early < switchAt ? early : Timestamp(microseconds: (local - after) * 1_000_000)
    }
}

func time(_ text: String) -> Timestamp { Timestamp(rfc3339: text)! }

final class BudgetLedgerTests: XCTestCase {
    private let calendar = ShiftCalendar.berlinAutumn
    private let monthly = DataBudget(match: "wwan*", limitBytes: 1000, period: .month(startDay: 15))

    private func reading(_ bytes: UInt64, index: Int32 = 5, _ name: String = "wwan0") -> CounterReading {
        CounterReading(interface: name, index: index, bytes: bytes)
    }

    /// Records each step's readings in turn and checks the bytes used after it.
    private func check(_ steps: [(readings: [CounterReading], boot: String, at: String, used: UInt64)], period: BudgetPeriod,
                       file: StaticString = #filePath, line: UInt = #line) {
        var ledger = BudgetLedger()
        for (number, step) in steps.enumerated() {
            ledger.record(step.readings, bootID: step.boot, at: time(step.at), period: period, calendar: calendar)
            XCTAssertEqual(ledger.usedBytes, step.used, "step \(number + 1)", file: file, line: line)
        }
    }

    func testCountsWhatTheCountersMovedResetsAndRecreatedLinksFromZero() {
        let at = "2026-11-20T12:00:00Z"
        // (readings, boot, time, used after)
        check([
            ([reading(1000)], "b1", at, 1000),           // a link not seen before: its whole counter
            ([reading(1500)], "b1", at, 1500),           // the difference
            ([reading(1500)], "b1", at, 1500),           // nothing moved
            ([reading(300)], "b1", at, 1800),            // below the last: reset, counted from zero, never negative
            ([reading(2000, index: 9)], "b1", at, 3800), // another index: re-created, its whole counter even above the last
            ([], "b1", at, 3800),                         // not read this time: nothing counted, nothing lost
            ([reading(2100, index: 9)], "b1", at, 3900), // read again with the same index: the difference only
            ([reading(100, index: 9)], "b1", at, 4000),  // below the last: from zero
            ([reading(150, index: 9)], "b2", at, 4150),  // another boot: counters forgotten, the whole reading
            ([reading(160, index: 9), reading(40, index: 3, "wwan1")], "b2", at, 4200),
        ], period: monthly.period)
    }

    /// A link deleted between two samples (a PPP link re-dialling under the same name) counts its deletion's last
    /// counters once; the new link of that name counts its own from zero.
    func testADeletedLinksLastCountersCountOnceAndTheNextLinkOfItsNameFromZero() {
        let at = time("2026-11-20T12:00:00Z")
        var ledger = BudgetLedger()
        ledger.record([reading(1000)], bootID: "b", at: at, period: monthly.period, calendar: calendar)
        ledger.recordDeleted(reading(1600), bootID: "b", at: at, period: monthly.period, calendar: calendar)
        XCTAssertEqual(ledger.usedBytes, 1600, "the 600 moved after the last sample")
        ledger.recordDeleted(reading(1600), bootID: "b", at: at, period: monthly.period, calendar: calendar)
        XCTAssertEqual(ledger.usedBytes, 1600, "the same deletion told twice")
        ledger.record([reading(200, index: 6)], bootID: "b", at: at, period: monthly.period, calendar: calendar)
        XCTAssertEqual(ledger.usedBytes, 1800, "the re-dialled link: its whole counter")
        ledger.record([reading(2500, index: 6)], bootID: "b", at: at, period: monthly.period, calendar: calendar)
        XCTAssertEqual(ledger.usedBytes, 4100, "its difference, not the old link's 1600 again")
        // A link made and deleted between two samples: its whole counter; other links' counters are left alone.
        ledger.recordDeleted(reading(300, index: 8, "wwan1"), bootID: "b", at: at, period: monthly.period, calendar: calendar)
        XCTAssertEqual(ledger.usedBytes, 4400)
        XCTAssertEqual(ledger.counters["wwan0"], LinkCounter(index: 6, bytes: 2500))
        // An older link's deletion told after the new link of its name was counted: its whole reading, the new counter kept.
        ledger.recordDeleted(reading(50, index: 4), bootID: "b", at: at, period: monthly.period, calendar: calendar)
        XCTAssertEqual(ledger.usedBytes, 4450)
        XCTAssertEqual(ledger.counters["wwan0"], LinkCounter(index: 6, bytes: 2500))
    }

    func testANewPeriodStartsAtLocalMidnightOfTheMonthsStartDay() {
        check([
            ([reading(400)], "b", "2026-11-14T22:59:59Z", 400), // 23:59:59 CET on the 14th
            ([reading(500)], "b", "2026-11-14T23:00:00Z", 100), // 00:00 on the 15th: the new period counts the difference only
            ([reading(900)], "b", "2026-12-14T22:59:00Z", 500),
            ([reading(950)], "b", "2026-12-14T23:00:00Z", 50),
        ], period: .month(startDay: 15))
    }

    /// A clock stepped back across the period's start (or one not set yet after a boot) counts in the period
    /// counted: the bytes used in it are kept, and those moved meanwhile added.
    func testAStepBackAcrossThePeriodsStartKeepsTheCount() {
        check([
            ([reading(400)], "b", "2026-11-15T10:00:00Z", 400),
            ([reading(500)], "b", "2026-11-14T22:00:00Z", 500), // back to the 14th (the previous period): kept
            ([reading(600)], "b", "2001-01-01T00:00:00Z", 600), // a clock not set yet
            ([reading(650)], "b", "2026-12-15T10:00:00Z", 50),  // forward into the next period
        ], period: .month(startDay: 15))
        // A synchronized clock: a period just before is still counted in, one further back believed (the period
        // counted was saved by a clock that ran ahead, as with a year of 2099).
        var ahead = BudgetLedger()
        ahead.record([reading(400)], bootID: "b", at: time("2026-11-15T10:00:00Z"), period: monthly.period, calendar: calendar)
        ahead.record([reading(500)], bootID: "b", at: time("2026-11-14T10:00:00Z"), period: monthly.period, calendar: calendar, synchronized: true)
        XCTAssertEqual(ahead.usedBytes, 500)
        ahead.record([reading(600)], bootID: "b", at: time("2026-09-20T10:00:00Z"), period: monthly.period, calendar: calendar, synchronized: true)
        XCTAssertEqual(ahead.usedBytes, 100)
        XCTAssertEqual(ahead.periodStart, LocalDate(year: 2026, month: 9, day: 15))
        var ledger = BudgetLedger()
        ledger.record([reading(850)], bootID: "b", at: time("2026-11-20T12:00:00Z"), period: monthly.period, calendar: calendar)
        let back = ledger.status(of: monthly, at: time("2026-11-01T12:00:00Z"), calendar: calendar)
        XCTAssertEqual(back.usedBytes, 850)
        XCTAssertEqual(back.resetsAt, time("2026-12-14T23:00:00Z"))
    }

    func testTheStatusHasTheStateTheLimitAndTheLocalMidnightItResetsAt() {
        var ledger = BudgetLedger()
        ledger.record([reading(850)], bootID: "b", at: time("2026-11-20T12:00:00Z"), period: monthly.period, calendar: calendar)
        XCTAssertEqual(ledger.status(of: monthly, at: time("2026-11-20T12:00:00Z"), calendar: calendar), BudgetStatus(
            state: .approaching, usedBytes: 850, limitBytes: 1000, period: "month", resetsAt: time("2026-12-14T23:00:00Z")
        ))
        // The next period began and nothing was read in it yet: nothing used.
        let later = ledger.status(of: monthly, at: time("2026-12-15T08:00:00Z"), calendar: calendar)
        XCTAssertEqual(later.usedBytes, 0)
        XCTAssertEqual(later.state, .below)
        XCTAssertEqual(later.resetsAt, time("2027-01-14T23:00:00Z"))
    }

    func testPeriodStarts() {
        let thursday = LocalDate(year: 2026, month: 11, day: 26)!
        XCTAssertEqual(thursday.isoWeekday, 4)
        // (period, date, first day, next first day)
        let table: [(BudgetPeriod, LocalDate, String, String)] = [
            (.day, thursday, "2026-11-26", "2026-11-27"),
            (.week(startWeekday: 1), thursday, "2026-11-23", "2026-11-30"),
            (.week(startWeekday: 4), thursday, "2026-11-26", "2026-12-03"),
            (.week(startWeekday: 5), thursday, "2026-11-20", "2026-11-27"),
            (.week(startWeekday: 7), thursday, "2026-11-22", "2026-11-29"),
            (.month(startDay: 1), thursday, "2026-11-01", "2026-12-01"),
            (.month(startDay: 26), thursday, "2026-11-26", "2026-12-26"),
            (.month(startDay: 27), thursday, "2026-10-27", "2026-11-27"),
            (.month(startDay: 5), LocalDate(year: 2026, month: 1, day: 3)!, "2025-12-05", "2026-01-05"),
            (.month(startDay: 28), LocalDate(year: 2028, month: 2, day: 29)!, "2028-02-28", "2028-03-28"),
            (.month(startDay: 1), LocalDate(year: 2026, month: 12, day: 31)!, "2026-12-01", "2027-01-01"),
        ]
        for (period, date, first, next) in table {
            let start = period.start(containing: date)
            XCTAssertEqual(start.description, first, "\(period) containing \(date)")
            XCTAssertEqual(period.nextStart(after: start).description, next, "\(period) after \(start)")
        }
    }

    func testADayOf25HoursAndOneOf23EndAtLocalMidnight() {
        let day = DataBudget(match: "*", limitBytes: 1000, period: .day)
        var ledger = BudgetLedger()
        // 2026-10-25 is 25 hours long in Berlin: 00:30 CEST and 23:30 CET, 24 hours apart, are the same day.
        ledger.record([reading(10)], bootID: "b", at: time("2026-10-24T22:30:00Z"), period: .day, calendar: calendar)
        ledger.record([reading(30)], bootID: "b", at: time("2026-10-25T22:30:00Z"), period: .day, calendar: calendar)
        XCTAssertEqual(ledger.periodStart?.description, "2026-10-25")
        XCTAssertEqual(ledger.usedBytes, 30)
        XCTAssertEqual(ledger.status(of: day, at: time("2026-10-25T22:30:00Z"), calendar: calendar).resetsAt, time("2026-10-25T23:00:00Z"))
        // 2026-03-29 is 23 hours long: it ends at 22:00Z.
        let spring = ShiftCalendar.berlinSpring
        XCTAssertEqual(spring.date(at: time("2026-03-29T21:59:59Z")).description, "2026-03-29")
        XCTAssertEqual(BudgetLedger().status(of: day, at: time("2026-03-29T12:00:00Z"), calendar: spring).resetsAt, time("2026-03-29T22:00:00Z"))
    }

    func testStatesAtTheThresholds() {
        let budget = DataBudget(match: "*", limitBytes: 1000, period: .day, approachingPercent: 80)
        XCTAssertEqual([0, 799, 800, 999, 1000, 5000].map { budget.state(used: $0) }, [.below, .below, .approaching, .approaching, .over, .over])
        let huge = DataBudget(match: "*", limitBytes: .max, period: .day, approachingPercent: 99)
        XCTAssertEqual(huge.state(used: .max / 100 * 98), .below, "no overflow computing the share of a huge limit")
        XCTAssertEqual(huge.state(used: .max - 1), .approaching)
        var ledger = BudgetLedger(periodStart: LocalDate(year: 2026, month: 11, day: 26), usedBytes: .max - 5)
        ledger.record([reading(100)], bootID: "b", at: time("2026-11-26T12:00:00Z"), period: .day, calendar: calendar)
        XCTAssertEqual(ledger.usedBytes, .max, "the count saturates instead of trapping")
    }

    func testABookCountsALinkForTheFirstBudgetThatMatches() {
        var book = BudgetBook(budgets: [
            DataBudget(match: "wwan0", limitBytes: 100, period: .day),
            DataBudget(match: "wwan*", limitBytes: 1000, period: .day),
        ], saved: ["wwan* day": BudgetLedger(periodStart: LocalDate(year: 2026, month: 11, day: 26), usedBytes: 500), "gone day": BudgetLedger()])
        XCTAssertEqual(book.ledgers.keys.sorted(), ["wwan* day", "wwan0 day"], "a budget no longer configured is dropped")
        let at = time("2026-11-26T12:00:00Z")
        book.record([reading(90, "wwan0"), reading(7, index: 6, "wwan1"), reading(1_000_000, index: 2, "eth0")], bootID: "b", at: at, calendar: calendar)
        let statuses = book.statuses(of: ["wwan0", "wwan1", "eth0"], at: at, calendar: calendar)
        XCTAssertEqual(statuses["wwan0"]?.usedBytes, 90)
        XCTAssertEqual(statuses["wwan0"]?.state, .approaching)
        XCTAssertEqual(statuses["wwan1"]?.usedBytes, 507, "the saved count goes on")
        XCTAssertNil(statuses["eth0"], "no budget covers eth0")
    }

    /// A network's budget (issue 50) counts the link only while it is on that network, from its last reading
    /// before it joined: what the link moved on another network, or before, never counts in it.
    func testANetworksBudgetCountsALinkOnlyWhileOnIt() {
        let phone = Array("Phone".utf8), home = Array("Home".utf8)
        var book = BudgetBook(budgets: [DataBudget(network: phone, limitBytes: 1000, period: .day)])
        let at = time("2026-11-26T12:00:00Z")
        let used = { (book: BudgetBook, network: [UInt8]?) in
            book.statuses(of: ["wlan0"], networks: network.map { ["wlan0": $0] } ?? [:], at: at, calendar: self.calendar)["wlan0"]?.usedBytes
        }
        let steps: [(bytes: UInt64, network: [UInt8]?, used: UInt64?)] = [
            (5000, home, nil),   // at home: no budget
            (5100, phone, 100),  // joined the phone between two readings: from the last reading on
            (5300, phone, 300),
            (9300, home, nil),   // 4000 bytes at home
            (9400, nil, nil),    // not on any network
            (9450, phone, 300 + 50), // back on the phone: only since the last reading
        ]
        for (number, step) in steps.enumerated() {
            book.record([CounterReading(interface: "wlan0", index: 3, bytes: step.bytes, network: step.network)], bootID: "b", at: at, calendar: calendar)
            XCTAssertEqual(used(book, step.network), step.used, "step \(number + 1)")
        }
        XCTAssertEqual(used(book, phone), 350, "the count stands whichever network the link is on now")
        // Deleted while on the phone: its last counters count there.
        book.recordDeleted(CounterReading(interface: "wlan0", index: 3, bytes: 9500), bootID: "b", at: at, calendar: calendar)
        XCTAssertEqual(used(book, phone), 400)
        XCTAssertEqual(book.networkStatuses(at: at, calendar: calendar)[phone]?.usedBytes, 400)
        // A network's budget comes before an interface's that names the link, wherever it stands in the file.
        let both = BudgetBook(budgets: [DataBudget(match: "wlan*", limitBytes: 5, period: .day), DataBudget(network: phone, limitBytes: 9, period: .day)])
        XCTAssertEqual(both.budget(for: "wlan0", network: phone)?.limitBytes, 9)
        XCTAssertEqual(both.budget(for: "wlan0", network: home)?.limitBytes, 5)
    }

    func testTheCountAloneRefreshesAtMostOncePerIntervalAStateChangeAtOnce() {
        let s: UInt64 = 1_000_000_000
        func status(_ state: BudgetState, _ used: UInt64) -> [String: BudgetStatus] {
            ["wwan0": BudgetStatus(state: state, usedBytes: used, limitBytes: 1000, period: "day", resetsAt: time("2026-11-27T00:00:00Z"))]
        }
        var rule = BudgetRefreshRule(intervalNanoseconds: 10 * s)
        // (statuses, monotonic seconds, published)
        let steps: [([String: BudgetStatus], UInt64, Bool)] = [
            (status(.below, 10), 100, true),       // the first
            (status(.below, 10), 101, false),      // the same
            (status(.below, 20), 105, false),      // the count alone, within 10 s
            (status(.below, 30), 110, true),       // 10 s after the last
            (status(.approaching, 800), 111, true), // a state change: at once
            (status(.approaching, 801), 112, false),
            ([:], 113, true),                      // the budget went away
        ]
        for (number, (statuses, second, expected)) in steps.enumerated() {
            XCTAssertEqual(rule.shouldPublish(statuses, now: second * s), expected, "step \(number + 1)")
        }
    }

    func testLocalDatesRoundTripAndRejectDaysThatDoNotExist() {
        for days in stride(from: -800_000, through: 2_900_000, by: 997) {
            XCTAssertEqual(LocalDate(daysSinceEpoch: days).daysSinceEpoch, days)
        }
        XCTAssertEqual(LocalDate(daysSinceEpoch: 0).description, "1970-01-01")
        XCTAssertNil(LocalDate(year: 2026, month: 2, day: 29))
        XCTAssertNotNil(LocalDate(year: 2028, month: 2, day: 29))
        XCTAssertNil(LocalDate("2026-13-01"))
        XCTAssertNil(LocalDate("2026-1-01"))
        XCTAssertNil(LocalDate("+026-01-01"))
        XCTAssertEqual(LocalDate("2026-11-26"), LocalDate(year: 2026, month: 11, day: 26))
    }

    func testInTheVerdictTheCountAloneIsARefreshAndAStateChangeIsAChange() {
        var snapshot = NetworkSnapshot(links: [Fixture.link(2, "wwan0")], addresses: [Fixture.v4(2, "203.0.113.12")],
                                       defaultRoutes: [Fixture.defaultRoute(via: "203.0.113.1", dev: 2)])
        let engine = InternetVerdict()
        var tracker = VerdictTracker()
        func record(_ state: BudgetState?, _ used: UInt64) -> VerdictTracker.Outcome {
            snapshot.budgets["wwan0"] = state.map {
                BudgetStatus(state: $0, usedBytes: used, limitBytes: 1000, period: "day", resetsAt: time("2026-11-27T00:00:00Z"))
            }
            return tracker.recordOutcome(engine.verdict(for: snapshot), at: Timestamp(microseconds: 0))
        }
        guard case .changed(let first) = record(.below, 10) else { return XCTFail("the first verdict is a change") }
        XCTAssertEqual(first.verdict.budget?.usedBytes, 10)
        guard case .refreshed(let refreshed) = record(.below, 20) else { return XCTFail("the count alone is a refresh") }
        XCTAssertEqual(refreshed.sequence, 1)
        XCTAssertEqual(refreshed.verdict.budget?.usedBytes, 20)
        guard case .changed(let approaching) = record(.approaching, 800) else { return XCTFail("a state change is a change") }
        XCTAssertEqual(approaching.sequence, 2)
        guard case .changed(let none) = record(nil, 0) else { return XCTFail("losing the budget is a change") }
        XCTAssertNil(none.verdict.budget)
        snapshot.links[2]?.flags = []
        snapshot.budgets["wwan0"] = BudgetStatus(state: .over, usedBytes: 1, limitBytes: 1, period: "day", resetsAt: time("2026-11-27T00:00:00Z"))
        XCTAssertNil(engine.verdict(for: snapshot).budget, "an unreachable verdict has no budget")
    }

    func testTheSummaryCountsInTheLimitsUnit() {
        let resets = time("2026-12-01T00:00:00Z")
        // (used, limit, period, state, text)
        let table: [(UInt64, UInt64, String, BudgetState, String)] = [
            (4_600_000_000, 5_000_000_000, "month", .approaching, "4.6 of 5.0 GB used this month (approaching)"),
            (170_999, 200_000, "day", .approaching, "170.9 of 200.0 kB used today (approaching)"),
            (5, 500, "week", .below, "5 of 500 B used this week (below)"),
            (.max, 2_000_000_000_000, "month", .over, "18446744.0 of 2.0 TB used this month (over)"),
        ]
        for (used, limit, period, state, text) in table {
            XCTAssertEqual(BudgetStatus(state: state, usedBytes: used, limitBytes: limit, period: period, resetsAt: resets).summary, text)
        }
        var snapshot = NetworkSnapshot(links: [Fixture.link(2, "wwan0")], addresses: [Fixture.v4(2, "203.0.113.12")],
                                       defaultRoutes: [Fixture.defaultRoute(via: "203.0.113.1", dev: 2)])
        snapshot.budgets["wwan0"] = BudgetStatus(state: .over, usedBytes: 5_000_000_000, limitBytes: 5_000_000_000, period: "month", resetsAt: resets)
        XCTAssertEqual(InternetVerdict().verdict(for: snapshot).summary,
                       "reachable via WWAN (wwan0), metered (interface kind wwan), 5.0 of 5.0 GB used this month (over)")
    }

    /// The daemon's calendar, the host's zone through glibc: Berlin's 25-hour day, and Santiago's day whose
    /// midnight does not exist (the clocks go from 24:00 to 01:00).
    func testTheSystemCalendarFollowsTheZonesRules() throws {
        let saved = getenv("TZ").map { String(cString: $0) }
        defer {
            if let saved { setenv("TZ", saved, 1) } else { unsetenv("TZ") }
            tzset()
        }
        let calendar = SystemCalendar()
        // (zone, local date, its start, an instant, its local date)
        let table: [(String, String, String, String, String)] = [
            ("Europe/Berlin", "2026-10-25", "2026-10-24T22:00:00Z", "2026-10-25T22:30:00Z", "2026-10-25"),
            ("Europe/Berlin", "2026-10-26", "2026-10-25T23:00:00Z", "2026-10-25T23:00:00Z", "2026-10-26"),
            ("Europe/Berlin", "2026-03-30", "2026-03-29T22:00:00Z", "2026-03-29T21:59:59Z", "2026-03-29"),
            ("America/Santiago", "2026-09-06", "2026-09-06T04:00:00Z", "2026-09-06T03:59:59Z", "2026-09-05"),
            ("America/Santiago", "2026-09-07", "2026-09-07T03:00:00Z", "2026-09-06T04:00:00Z", "2026-09-06"),
            ("UTC", "2026-11-26", "2026-11-26T00:00:00Z", "1969-12-31T23:59:59Z", "1969-12-31"),
        ]
        for (zone, day, start, instant, date) in table {
            guard zone == "UTC" || FileManager.default.fileExists(atPath: "/usr/share/zoneinfo/\(zone)") else { throw XCTSkip("no tzdata for \(zone)") }
            setenv("TZ", zone, 1)
            tzset()
            XCTAssertEqual(calendar.startOfDay(LocalDate(day)!), time(start), "\(zone) \(day)")
            XCTAssertEqual(calendar.date(at: time(instant)).description, date, "\(zone) \(instant)")
        }
    }
}

