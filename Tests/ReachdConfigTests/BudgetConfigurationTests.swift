import ReachdConfig
import ReachdModel
import XCTest

final class BudgetConfigurationTests: XCTestCase {
    func testParsesBudgets() throws {
        let config = try Configuration(toml: """
            [[budget]]
            interface = "wwan*"
            limit = "5GB"
            period = "month"
            start = 15
            approaching = 90

            [[budget]]
            interface = "usb0"
            limit = 200000
            period = "week"
            start = 7

            [[budget]]
            interface = "wg*"
            limit = "1.5 GiB"
            period = "day"
            """)
        XCTAssertEqual(config.budgets, [
            DataBudget(match: "wwan*", limitBytes: 5_000_000_000, period: .month(startDay: 15), approachingPercent: 90),
            DataBudget(match: "usb0", limitBytes: 200_000, period: .week(startWeekday: 7)),
            DataBudget(match: "wg*", limitBytes: 1_610_612_736, period: .day),
        ])
        let defaults = try Configuration(toml: "[[budget]]\ninterface = \"a\"\nlimit = 1\nperiod = \"month\"")
        XCTAssertEqual(defaults.budgets, [DataBudget(match: "a", limitBytes: 1, period: .month(startDay: 1), approachingPercent: 80)])
    }

    func testByteCountStrings() throws {
        // (limit, bytes; nil: refused)
        let table: [(String, UInt64?)] = [
            ("500MiB", 524_288_000), ("5GB", 5_000_000_000), ("2 TB", 2_000_000_000_000), ("1kB", 1000), ("1KiB", 1024),
            ("1000", 1000), ("1000B", 1000), ("0.5GB", 500_000_000), ("16777216TiB", nil), ("18446744073709551615", .max),
            ("18446744073709551616", nil), ("5gb", nil), ("5 G", nil), ("", nil), (" 5GB", nil), ("1.GB", nil), (".5GB", nil),
            ("1.2.3GB", nil), ("-5GB", nil), ("0", nil), ("1.0000000001GB", nil),
        ]
        for (text, bytes) in table {
            let config = try? Configuration(toml: "[[budget]]\ninterface = \"a\"\nlimit = \"\(text)\"\nperiod = \"day\"")
            XCTAssertEqual(config?.budgets.first?.limitBytes, bytes, text)
        }
    }

    /// A budget naming a Wi-Fi network (issue 50): by name, or in hex for an SSID that is not UTF-8.
    func testParsesNetworkBudgets() throws {
        let config = try Configuration(toml: """
            [[budget]]
            network = "Phone"
            limit = "2GB"
            period = "month"
            [[budget]]
            network_hex = "ff00"
            limit = 1000
            period = "day"
            """)
        XCTAssertEqual(config.budgets, [
            DataBudget(network: Array("Phone".utf8), limitBytes: 2_000_000_000, period: .month(startDay: 1)),
            DataBudget(network: [0xFF, 0x00], limitBytes: 1000, period: .day),
        ])
        XCTAssertEqual(config.budgets.map(\.key), ["network 50686f6e65 month 1", "network ff00 day"])
        XCTAssertFalse(config.budgets[0].matches("Phone"), "a network's budget names no interface")
    }

    func testErrorsNameTheProblem() {
        let budget = "[[budget]]\ninterface = \"wwan*\"\nlimit = 1000\n"
        let table: [(String, String)] = [
            ("budget = 3", "\"budget\" must be an array of tables: write [[budget]]"),
            ("[[budget]]\nlimit = 1\nperiod = \"day\"", "budget #1: \"interface\" (an interface name or glob, such as \"wwan*\") or \"network\" (a Wi-Fi network's name) is required"),
            ("[[budget]]\ninterface = \"a\"\nnetwork = \"Phone\"\nlimit = 1\nperiod = \"day\"", "budget #1: give one of \"interface\", \"network\" and \"network_hex\""),
            ("[[budget]]\nnetwork = \"\"\nlimit = 1\nperiod = \"day\"", "budget #1: \"network\" must be a Wi-Fi network's name of 1 to 32 bytes"),
            ("[[budget]]\nnetwork_hex = \"zz\"\nlimit = 1\nperiod = \"day\"", "budget #1: \"network_hex\" must be 1 to 32 bytes in hex"),
            ("[[budget]]\nnetwork = \"Phone\"\nperiod = \"day\"", "budget #1 (network \"Phone\"): \"limit\""),
            ("[[budget]]\nnetwork = \"P\"\nlimit = 1\nperiod = \"day\"\n[[budget]]\nnetwork_hex = \"50\"\nlimit = 5\nperiod = \"day\"",
             "budget (network \"P\"): two budgets with the same network and period"),
            ("[[budget]]\ninterface = \"a b\"\nlimit = 1\nperiod = \"day\"", "\"interface\" (an interface name or glob"),
            ("[[budget]]\ninterface = \"a\"\nperiod = \"day\"", "budget #1 (a): \"limit\" (bytes, or a string such as \"5GB\" or \"500MiB\") is required"),
            ("[[budget]]\ninterface = \"a\"\nlimit = -1\nperiod = \"day\"", "\"limit\" must be a number of bytes above 0"),
            ("[[budget]]\ninterface = \"a\"\nlimit = \"lots\"\nperiod = \"day\"", "\"limit\" must be a number of bytes above 0"),
            (budget, "\"period\" must be \"day\", \"week\" or \"month\""),
            (budget + "period = \"year\"", "\"period\" must be \"day\", \"week\" or \"month\""),
            (budget + "period = \"month\"\nstart = 29", "\"start\" of a month is its first day, 1 to 28"),
            (budget + "period = \"week\"\nstart = 0", "\"start\" of a week is its first weekday, 1 (Monday) to 7 (Sunday)"),
            (budget + "period = \"day\"\nstart = 1", "a day has no \"start\""),
            (budget + "period = \"month\"\nstart = \"1\"", "\"start\" must be a whole number"),
            (budget + "period = \"day\"\napproaching = 100", "\"approaching\" must be a percentage of the limit, 1 to 99"),
            (budget + "period = \"day\"\napproaching = 0", "\"approaching\" must be a percentage"),
            (budget + "period = \"day\"\nquota = 1", "budget #1: unknown key \"quota\""),
            (budget + "period = \"day\"\n[[budget]]\ninterface = \"wwan*\"\nlimit = 5\nperiod = \"day\"", "two budgets with the same interface and period"),
        ]
        for (text, expected) in table {
            XCTAssertThrowsError(try Configuration(toml: text), text) { error in
                let message = (error as? ConfigurationError)?.message ?? "\(error)"
                XCTAssertTrue(message.contains(expected), "\(message) does not say \(expected)")
            }
        }
    }
}
