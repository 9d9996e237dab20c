/// The `KEY=value` lines of a systemd state file (`parse_env_file`'s format): comments (`#`, `;`) and blank
/// lines skipped, a line without `=` ignored, CR before LF dropped, optional double quotes around a value
/// removed; a key given twice keeps its last value.
enum EnvFileLines {
    static func values(_ bytes: [UInt8]) -> [String: [UInt8]] {
        var values: [String: [UInt8]] = [:]
        for var line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            guard let first = line.first, first != UInt8(ascii: "#"), first != UInt8(ascii: ";"),
                  let equals = line.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let key = String(decoding: line[..<equals], as: UTF8.self)
            var value = line[line.index(after: equals)...]
            if value.count >= 2, value.first == UInt8(ascii: "\""), value.last == UInt8(ascii: "\"") {
                value = value.dropFirst().dropLast()
            }
            values[key] = Array(value)
        }
        return values
    }
}
