import ReachdModel
import XCTest

final class BudgetLedgerFileTests: XCTestCase {
    func testLedgersSurviveTheirText() throws {
        let ledgers = [
            "wwan* month 15": BudgetLedger(periodStart: LocalDate(year: 2026, month: 11, day: 15), usedBytes: 4_600_000_000, bootID: "0b1d",
                                           counters: ["wwan0": LinkCounter(index: 5, bytes: 123), "wwan1": LinkCounter(index: 9, bytes: .max)]),
            "usb0 day": BudgetLedger(periodStart: LocalDate(year: 2026, month: 11, day: 26), usedBytes: 0),
        ]
        let text = BudgetLedgerFile.text(ledgers)
        XCTAssertEqual(try BudgetLedgerFile.ledgers(in: Array(text.utf8)).get(), ledgers)
        XCTAssertTrue(text.hasPrefix("reachd-budgets 1\n"))
    }

    func testAnythingElseIsRefusedWithTheReason() {
        let header = "reachd-budgets 1\n"
        let budget = "budget\twwan* day\t2026-11-26\t10\tb\n"
        // (file, what the reason names)
        let table: [(String, String)] = [
            ("", "line 1"),
            ("reachd-budgets 2\n", "line 1"),
            (header + "budget\twwan* day\t2026-02-30\t10\tb\n", "line 2"),
            (header + "budget\twwan* day\t2026-11-26\t-10\tb\n", "line 2"),
            (header + "budget\twwan* day\t2026-11-26\t18446744073709551616\tb\n", "line 2"),
            (header + budget + budget, "line 3"),
            (header + "counter\twwan* day\twwan0\t5\t10\n", "line 2"),
            (header + budget + "counter\twwan* day\twwan0\t5\n", "line 3"),
            (header + budget + "counter\twwan* day\twwan0\tfive\t10\n", "line 3"),
            (header + budget + "counter\twwan* day\twwan0\t5\t1\ncounter\twwan* day\twwan0\t5\t2\n", "line 4"),
            (header + budget + "counter\twwan* day\twwan\u{1B}0\t5\t1\n", "line 3"),
            (header + "rm -rf /\n", "line 2"),
            (header + String(repeating: "#", count: BudgetLedgerFile.maximumBytes), "longer than"),
        ]
        for (file, reason) in table {
            switch BudgetLedgerFile.ledgers(in: Array(file.utf8)) {
            case .success(let ledgers): XCTFail("\(file.prefix(80).debugDescription) was read as \(ledgers)")
            case .failure(let error): XCTAssertTrue(error.description.contains(reason), "\(file.prefix(80).debugDescription): \(error)")
            }
        }
        XCTAssertEqual(try? BudgetLedgerFile.ledgers(in: [0x72, 0xFF]).get(), nil, "not UTF-8")
    }

    func testTooManyEntriesAreRefused() {
        var file = "reachd-budgets 1\nbudget\tk\t2026-11-26\t1\tb\n"
        for n in 0...1024 { file += "counter\tk\tif\(n)\t1\t1\n" }
        XCTAssertThrowsError(try BudgetLedgerFile.ledgers(in: Array(file.utf8)).get())
    }

    /// However many links a host has, the text stays what reading accepts: the counters that do not fit are left out.
    func testTheTextOfManyLinksStaysReadable() throws {
        let start = LocalDate(year: 2026, month: 11, day: 26)
        var ledgers: [String: BudgetLedger] = [:]
        for budget in 0..<64 {
            var counters: [String: LinkCounter] = [:]
            for link in 0..<(budget == 0 ? 5000 : 200) { counters["veth\(String(repeating: "x", count: 6))\(link)"] = LinkCounter(index: Int32(link), bytes: .max) }
            ledgers["veth\(budget)* month 28"] = BudgetLedger(periodStart: start, usedBytes: .max, bootID: String(repeating: "b", count: 36), counters: counters)
        }
        let text = BudgetLedgerFile.text(ledgers)
        XCTAssertLessThanOrEqual(text.utf8.count, BudgetLedgerFile.maximumBytes)
        let read = try BudgetLedgerFile.ledgers(in: Array(text.utf8)).get()
        XCTAssertEqual(read.count, 64, "every budget's count is kept")
        XCTAssertEqual(read["veth0* month 28"]?.usedBytes, .max)
        XCTAssertLessThanOrEqual(read["veth0* month 28"]?.counters.count ?? .max, 1024)
        XCTAssertGreaterThan(read.values.reduce(0) { $0 + $1.counters.count }, 1000, "as many counters as fit")
    }
}

