import ReachdModel

extension Configuration {
    private static let budgetKeys: Set<String> = ["interface", "network", "network_hex", "limit", "period", "start", "approaching"]

    /// `[[budget]]` tables: data budgets of the links whose name matches, or of a Wi-Fi network (`network`, or
    /// `network_hex` for an SSID that is not UTF-8), in order (a link counts for its network's, else the first that
    /// matches its name).
    mutating func readBudgets(_ value: TOMLValue?) throws {
        guard let value else { return }
        guard let array = value.array, array.allSatisfy({ $0.table != nil }) else {
            throw ConfigurationError("\"budget\" must be an array of tables: write [[budget]]")
        }
        guard array.count <= 64 else { throw ConfigurationError("budget: at most 64 [[budget]] tables") }
        for (position, element) in array.enumerated() {
            budgets.append(try Self.budget(from: element.table!, position: position + 1))
        }
        var keys: Set<String> = []
        for budget in budgets where !keys.insert(budget.key).inserted {
            throw ConfigurationError("budget (\(budget.label)): two budgets with the same \(budget.network == nil ? "interface" : "network") and period; merge them")
        }
    }

    private static func budget(from entry: TOMLTable, position: Int) throws -> DataBudget {
        var place = "budget #\(position)"
        for key in entry.keys where !budgetKeys.contains(key) {
            throw ConfigurationError("\(place): unknown key \"\(key)\" (known: \(budgetKeys.sorted().joined(separator: ", ")))")
        }
        let network = try Self.budgetNetwork(entry, place: place)
        let match = entry["interface"]?.string ?? ""
        if network == nil {
            guard !match.isEmpty, match.utf8.count <= 64, match.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else {
                throw ConfigurationError("\(place): \"interface\" (an interface name or glob, such as \"wwan*\") or \"network\" (a Wi-Fi network's name) is required")
            }
        }
        place += " (\(network.flatMap { WifiIdentity(ssid: $0).map { "network \"\($0.name)\"" } } ?? match))"
        guard let limitValue = entry["limit"] else {
            throw ConfigurationError("\(place): \"limit\" (bytes, or a string such as \"5GB\" or \"500MiB\") is required")
        }
        let limit: UInt64? = switch limitValue {
        case .integer(let n) where n > 0: UInt64(n)
        case .string(let text): ByteCount.parse(text)
        default: nil
        }
        guard let limit, limit > 0 else {
            throw ConfigurationError("\(place): \"limit\" must be a number of bytes above 0, or a string such as \"5GB\", \"1.5GiB\" or \"500MiB\"")
        }
        guard let periodName = entry["period"]?.string, ["day", "week", "month"].contains(periodName) else {
            throw ConfigurationError("\(place): \"period\" must be \"day\", \"week\" or \"month\"")
        }
        let start = entry["start"]?.integer
        if entry["start"] != nil, start == nil { throw ConfigurationError("\(place): \"start\" must be a whole number") }
        let period: BudgetPeriod
        switch periodName {
        case "week":
            let day = start.map { Int($0) } ?? 1
            guard (1...7).contains(day) else {
                throw ConfigurationError("\(place): \"start\" of a week is its first weekday, 1 (Monday) to 7 (Sunday)")
            }
            period = .week(startWeekday: day)
        case "month":
            let day = start.map { Int($0) } ?? 1
            guard (1...28).contains(day) else {
                throw ConfigurationError("\(place): \"start\" of a month is its first day, 1 to 28")
            }
            period = .month(startDay: day)
        default:
            guard start == nil else { throw ConfigurationError("\(place): a day has no \"start\" (it starts at local midnight)") }
            period = .day
        }
        var budget = network.map { DataBudget(network: $0, limitBytes: limit, period: period) }
            ?? DataBudget(match: match, limitBytes: limit, period: period)
        if let value = entry["approaching"] {
            guard let percent = value.integer, (1...99).contains(percent) else {
                throw ConfigurationError("\(place): \"approaching\" must be a percentage of the limit, 1 to 99")
            }
            budget.approachingPercent = Int(percent)
        }
        return budget
    }

    /// A budget's `network` (or `network_hex`): the SSID's bytes; nil when it names none.
    private static func budgetNetwork(_ entry: TOMLTable, place: String) throws -> [UInt8]? {
        let longest = WifiIdentity.maximumSSIDLength
        switch (entry["interface"], entry["network"], entry["network_hex"]) {
        case (nil, let text?, nil):
            guard let ssid = text.string.map({ Array($0.utf8) }), (1...longest).contains(ssid.count) else {
                throw ConfigurationError("\(place): \"network\" must be a Wi-Fi network's name of 1 to \(longest) bytes")
            }
            return ssid
        case (nil, nil, let hex?):
            guard let ssid = hex.string.flatMap(WifiIdentity.bytes(hex:)), (1...longest).contains(ssid.count) else {
                throw ConfigurationError("\(place): \"network_hex\" must be 1 to \(longest) bytes in hex, such as \"50686f6e65\"")
            }
            return ssid
        case (_, nil, nil):
            return nil
        default:
            throw ConfigurationError("\(place): give one of \"interface\", \"network\" and \"network_hex\"")
        }
    }
}

/// Byte counts as people write them: `5GB` (powers of 1000: kB, MB, GB, TB), `500MiB` (powers of 1024: KiB, MiB,
/// GiB, TiB), `1.5 GB`, `1000` or `1000B`.
enum ByteCount {
    private static let units: [String: UInt64] = [
        "": 1, "B": 1, "kB": 1000, "KB": 1000, "MB": 1_000_000, "GB": 1_000_000_000, "TB": 1_000_000_000_000,
        "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
    ]

    /// The bytes `text` stands for (rounded down), or nil when it is not such a count or does not fit 64 bits.
    static func parse(_ text: String) -> UInt64? {
        let digits = text.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
        let unit = text.dropFirst(digits.count).drop { $0 == " " }
        guard let multiplier = units[String(unit)], text.utf8.count <= 32 else { return nil }
        let parts = digits.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), !parts[0].isEmpty, let whole = UInt64(parts[0]) else { return nil }
        let (bytes, overflow) = whole.multipliedReportingOverflow(by: multiplier)
        guard !overflow else { return nil }
        guard parts.count == 2 else { return bytes }
        let fraction = parts[1]
        guard !fraction.isEmpty, fraction.count <= 9, let numerator = UInt64(fraction) else { return nil }
        var denominator: UInt64 = 1
        for _ in 0..<fraction.count { denominator *= 10 }
        // multiplier ≤ 2^40 and numerator < 10^9 < 2^30: the product fits.
        let (sum, sumOverflow) = bytes.addingReportingOverflow(numerator * multiplier / denominator)
        return sumOverflow ? nil : sum
    }
}
