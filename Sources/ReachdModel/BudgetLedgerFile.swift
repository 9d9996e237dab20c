/// The text of reachd's budget state file: each budget's period and used bytes, and its links' last
/// counters, so that a restart or a reboot continues the count. Tab-separated lines:
///
///     reachd-budgets 1
///     budget <TAB> KEY <TAB> PERIOD-START <TAB> USED-BYTES <TAB> BOOT-ID
///     counter <TAB> KEY <TAB> INTERFACE <TAB> INDEX <TAB> BYTES
///
/// Reading is strict and bounded: anything else makes the whole file unusable (a fresh start).
public enum BudgetLedgerFile {
    static let header = "reachd-budgets 1"
    /// More bytes than this is not a file reachd wrote.
    public static let maximumBytes = 256 * 1024
    /// Ledgers, and counters per ledger, a file may hold.
    static let maximumEntries = 1024

    /// The file's text for `ledgers` (by budget key), within what `ledgers(in:)` reads back: beyond the
    /// counters that fit, links' last readings are left out (after a restart they count their whole counter
    /// again: more than they moved, never less). The budget lines always fit (at most 64 of ~600 bytes).
    public static func text(_ ledgers: [String: BudgetLedger]) -> String {
        var lines = [header]
        var budgetLines: [String] = []
        var counterLines: [String] = []
        for (key, ledger) in ledgers.sorted(by: { $0.key < $1.key }).prefix(maximumEntries) {
            guard let start = ledger.periodStart, safe(key) else { continue }
            budgetLines.append(["budget", key, start.description, String(ledger.usedBytes), ledger.bootID ?? "-"].joined(separator: "\t"))
            for (interface, counter) in ledger.counters.sorted(by: { $0.key < $1.key }).prefix(maximumEntries) where safe(interface) {
                counterLines.append(["counter", key, interface, String(counter.index), String(counter.bytes)].joined(separator: "\t"))
            }
        }
        lines += budgetLines
        var size = lines.reduce(0) { $0 + $1.utf8.count + 1 }
        for line in counterLines {
            size += line.utf8.count + 1
            guard size <= maximumBytes else { break }
            lines.append(line)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The ledgers in `bytes`, or why they cannot be used.
    public static func ledgers(in bytes: [UInt8]) -> Result<[String: BudgetLedger], BudgetFileError> {
        guard bytes.count <= maximumBytes else { return .failure(BudgetFileError("longer than \(maximumBytes) bytes")) }
        guard let text = String(validating: bytes, as: UTF8.self) else { return .failure(BudgetFileError("not UTF-8 text")) }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
        guard lines.first == Substring(header) else { return .failure(BudgetFileError("line 1 is not \"\(header)\"")) }
        var ledgers: [String: BudgetLedger] = [:]
        for (offset, line) in lines.enumerated().dropFirst() {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            let place = "line \(offset + 1)"
            switch fields.first {
            case "budget":
                guard fields.count == 5, safe(fields[1]), let start = LocalDate(fields[2]), let used = UInt64(fields[3]),
                      ledgers[fields[1]] == nil, ledgers.count < maximumEntries, safe(fields[4]) else {
                    return .failure(BudgetFileError("\(place): not a budget line reachd writes"))
                }
                ledgers[fields[1]] = BudgetLedger(periodStart: start, usedBytes: used, bootID: fields[4] == "-" ? nil : fields[4])
            case "counter":
                guard fields.count == 5, let ledger = ledgers[fields[1]], safe(fields[2]), let index = Int32(fields[3]),
                      let bytes = UInt64(fields[4]), ledger.counters[fields[2]] == nil, ledger.counters.count < maximumEntries else {
                    return .failure(BudgetFileError("\(place): not a counter line after its budget"))
                }
                ledgers[fields[1]]?.counters[fields[2]] = LinkCounter(index: index, bytes: bytes)
            default:
                return .failure(BudgetFileError("\(place): unknown line"))
            }
        }
        return .success(ledgers)
    }

    /// A field that survives the format: not empty, no tab, no line break, no other control character.
    private static func safe(_ field: String) -> Bool {
        !field.isEmpty && field.utf8.count <= 256 && field.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F }
    }
}

/// Why a budget state file cannot be used.
public struct BudgetFileError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
