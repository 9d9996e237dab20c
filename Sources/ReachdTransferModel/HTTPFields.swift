/// Total readers for the pieces HTTP header values are made of (RFC 9110 §5.6): every input gives a value or
/// nil, never a trap; numbers are bounded, dates and durations saturate, nothing allocates more than the
/// input's size.

/// A non-negative decimal number of plain ASCII digits (no sign, no spaces), as HTTP writes lengths and
/// offsets; nil past 18 significant digits (leading zeros do not count), so any result fits Int64 with room
/// for arithmetic on it.
func decimal<S: StringProtocol>(_ text: S) -> Int64? {
    guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
    let significant = text.utf8.drop { $0 == 0x30 }
    guard significant.count <= 18 else { return nil }
    return significant.reduce(0) { $0 * 10 + Int64($1 - 0x30) }
}

/// `Content-Length`: one decimal number, nil for anything else (a list, a sign, spaces inside).
public func contentLength(_ value: String?) -> Int64? {
    value.flatMap { decimal($0.trimmingSpaces) }
}

/// `delta-seconds` (RFC 9111 §1.2.2): digits, saturating at 2^31 as the RFC asks; nil for anything else.
func deltaSeconds<S: StringProtocol>(_ text: S) -> Int64? {
    guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
    let significant = text.drop { $0 == "0" }
    guard significant.utf8.count <= 10, let value = Int64(significant.isEmpty ? "0" : String(significant)) else { return 1 << 31 }
    return min(value, 1 << 31)
}

extension Int64 {
    /// `self + other`, pinned to Int64's range instead of trapping.
    func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self * other`, pinned to Int64's range instead of trapping.
    func saturatingMultiply(_ other: Int64) -> Int64 {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? ((self < 0) != (other < 0) ? .min : .max) : product
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (HTTP's optional white space).
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

/// Comma-separated list members (RFC 9110 §5.6.1), commas inside quoted strings kept, empty members
/// dropped, each trimmed. At most `limit` members are returned: a header cannot make the list grow past it.
func listMembers(_ value: String, limit: Int = 64) -> [Substring] {
    var members: [Substring] = []
    var start = value.startIndex, index = value.startIndex
    var quoted = false, escaped = false
    func close(_ end: String.Index) {
        let member = value[start..<end].drop { $0 == " " || $0 == "\t" }
        let trimmed = member.reversed().drop { $0 == " " || $0 == "\t" }.count
        if trimmed > 0, members.count < limit { members.append(member.prefix(trimmed)) }
    }
    while index < value.endIndex {
        let character = value[index]
        if escaped {
            escaped = false
        } else if quoted {
            if character == "\\" { escaped = true } else if character == "\"" { quoted = false }
        } else if character == "\"" {
            quoted = true
        } else if character == "," {
            close(index)
            start = value.index(after: index)
        }
        index = value.index(after: index)
    }
    close(value.endIndex)
    return members
}

/// A `token` (RFC 9110 §5.6.2): visible ASCII without delimiters.
func isToken<S: StringProtocol>(_ text: S) -> Bool {
    !text.isEmpty && text.utf8.allSatisfy { byte in
        byte > 0x20 && byte < 0x7F && !"\"(),/:;<=>?@[\\]{}".utf8.contains(byte)
    }
}

/// The content of a `quoted-string` with its escapes undone, or a bare token; nil for anything else.
func tokenOrQuotedString<S: StringProtocol>(_ text: S) -> String? {
    if isToken(text) { return String(text) }
    let bytes = Array(text.utf8)
    guard bytes.count >= 2, bytes.first == 0x22, bytes.last == 0x22 else { return nil }
    var content: [UInt8] = []
    var escaped = false
    for byte in bytes.dropFirst().dropLast() {
        if escaped {
            content.append(byte)
            escaped = false
        } else if byte == 0x5C {
            escaped = true
        } else if byte == 0x22 || byte < 0x20 && byte != 0x09 || byte == 0x7F {
            return nil
        } else {
            content.append(byte)
        }
    }
    guard !escaped else { return nil }
    return String(decoding: content, as: UTF8.self)
}

/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the HTTP date format.
public enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Seconds since 1970, or nil for anything but an IMF-fixdate (two-digit day, four-digit year).
    public static func unixSeconds(_ text: String) -> Int64? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0].utf8.count == 4, parts[0].hasSuffix(","), parts[5] == "GMT",
              parts[1].utf8.count == 2, let day = decimal(parts[1]),
              let monthIndex = months.firstIndex(where: { $0 == parts[2] }),
              parts[3].utf8.count == 4, let year = decimal(parts[3]) else { return nil }
        let clock = parts[4].split(separator: ":", omittingEmptySubsequences: false)
        guard parts[4].utf8.count == 8, clock.count == 3, let h = decimal(clock[0]), let m = decimal(clock[1]), let s = decimal(clock[2]),
              (1...31).contains(day), (0...23).contains(h), (0...59).contains(m), (0...60).contains(s) else { return nil }
        return daysFromCivil(year: year, month: Int64(monthIndex + 1), day: day) * 86400 + h * 3600 + m * 60 + s
    }

    /// Days since 1970-01-01 (Howard Hinnant's algorithm); years here have four digits.
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }
}
