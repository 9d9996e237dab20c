/// systemd's `KEY=value` state files (networkd's `/run/systemd/netif/leases/IFINDEX` and `links/IFINDEX`), read as
/// tolerantly as `parse_env_file`: lines end in LF or CRLF; blank lines, `#` and `;` comments and lines without `=`
/// are skipped; key and value are trimmed of spaces and tabs; a value in double quotes loses them; the last line of a
/// key wins. Works on the bytes as they are and copies nothing.
enum EnvFileLines {
    /// The value of the last `key=` line, or nil when no line sets the key.
    static func lastValue(of key: String, in bytes: [UInt8]) -> ArraySlice<UInt8>? {
        let wanted = Array(key.utf8)
        var found: ArraySlice<UInt8>?
        var rest = bytes[...]
        while !rest.isEmpty {
            let end = rest.firstIndex(of: newline) ?? rest.endIndex
            let line = rest[..<end]
            rest = rest[(end < rest.endIndex ? end + 1 : end)...]
            let text = trimmed(line.last == carriageReturn ? line.dropLast() : line)
            guard let first = text.first, first != hash, first != semicolon,
                  let equals = text.firstIndex(of: equalsSign),
                  trimmed(text[..<equals]).elementsEqual(wanted)
            else { continue }
            found = unquoted(trimmed(text[(equals + 1)...]))
        }
        return found
    }

    private static func trimmed(_ text: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var text = text
        while let first = text.first, first == space || first == tab { text = text.dropFirst() }
        while let last = text.last, last == space || last == tab { text = text.dropLast() }
        return text
    }

    private static func unquoted(_ value: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard value.count >= 2, value.first == quote, value.last == quote else { return value }
        return value.dropFirst().dropLast()
    }

    private static let newline = UInt8(ascii: "\n"), carriageReturn = UInt8(ascii: "\r")
    private static let space = UInt8(ascii: " "), tab = UInt8(ascii: "\t"), quote = UInt8(ascii: "\"")
    private static let hash = UInt8(ascii: "#"), semicolon = UInt8(ascii: ";"), equalsSign = UInt8(ascii: "=")
}
