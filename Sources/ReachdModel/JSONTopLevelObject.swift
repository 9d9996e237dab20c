/// One member of a JSON object as the small readers in this module need it: scalars kept, nested values only named.
enum JSONMember: Equatable {
    case string(String)
    case bool(Bool)
    /// The number's text exactly as written (JSON grammar checked), so that a reader decides what it accepts.
    case number(String)
    case null
    case array
    case object

    /// The number as an unsigned integer: plain digits that fit `UInt64` (no sign, fraction or exponent).
    var unsignedInteger: UInt64? {
        guard case .number(let text) = self, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return UInt64(text)
    }
}

/// A strict, total JSON reader (RFC 8259) for documents whose top level must be an object: the members of that
/// object (the last of a repeated name wins), nested values checked but not kept. Nesting deeper than
/// `maximumDepth` and invalid UTF-8 are errors; the error is a short reason. Without Foundation, so that
/// ReachdModel stays free of it.
struct JSONTopLevelObject {
    static let maximumDepth = 32

    static func parse(_ bytes: [UInt8]) -> Result<[String: JSONMember], JSONSyntaxError> {
        var reader = JSONTopLevelObject(bytes: bytes)
        do throws(JSONSyntaxError) {
            reader.skipWhitespace()
            guard reader.peek == UInt8(ascii: "{") else { throw JSONSyntaxError("the top level is not an object") }
            var members: [String: JSONMember] = [:]
            try reader.readObject(depth: 1) { name, member in members[name] = member }
            reader.skipWhitespace()
            guard reader.index == bytes.count else { throw JSONSyntaxError("text after the object at byte \(reader.index)") }
            return .success(members)
        } catch {
            return .failure(error)
        }
    }

    private let bytes: [UInt8]
    private var index = 0

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private mutating func expect(_ byte: UInt8) throws(JSONSyntaxError) {
        guard peek == byte else { throw unexpected("'\(Character(Unicode.Scalar(byte)))'") }
        index += 1
    }

    private func unexpected(_ wanted: String) -> JSONSyntaxError {
        JSONSyntaxError(peek == nil ? "the text ends where \(wanted) was expected" : "expected \(wanted) at byte \(index)")
    }

    /// Reads `{ "name": value, ... }`, handing each member to `member`.
    private mutating func readObject(depth: Int, _ member: (String, JSONMember) -> Void) throws(JSONSyntaxError) {
        try expect(UInt8(ascii: "{"))
        skipWhitespace()
        if peek == UInt8(ascii: "}") { index += 1; return }
        while true {
            skipWhitespace()
            let name = try readString()
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            member(name, try readValue(depth: depth))
            skipWhitespace()
            if peek == UInt8(ascii: "}") { index += 1; return }
            try expect(UInt8(ascii: ","))
        }
    }

    private mutating func readArray(depth: Int) throws(JSONSyntaxError) {
        try expect(UInt8(ascii: "["))
        skipWhitespace()
        if peek == UInt8(ascii: "]") { index += 1; return }
        while true {
            _ = try readValue(depth: depth)
            skipWhitespace()
            if peek == UInt8(ascii: "]") { index += 1; return }
            try expect(UInt8(ascii: ","))
        }
    }

    /// Any value; `depth` is the nesting of the container holding it.
    private mutating func readValue(depth: Int) throws(JSONSyntaxError) -> JSONMember {
        skipWhitespace()
        switch peek {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            guard depth < Self.maximumDepth else { throw JSONSyntaxError("nested deeper than \(Self.maximumDepth)") }
            if peek == UInt8(ascii: "{") {
                try readObject(depth: depth + 1) { _, _ in }
                return .object
            }
            try readArray(depth: depth + 1)
            return .array
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"): try readLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try readLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try readLiteral("null"); return .null
        default: return .number(try readNumber())
        }
    }

    private mutating func readLiteral(_ literal: String) throws(JSONSyntaxError) {
        for byte in literal.utf8 { try expect(byte) }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func readNumber() throws(JSONSyntaxError) -> String {
        let start = index
        if peek == UInt8(ascii: "-") { index += 1 }
        if peek == UInt8(ascii: "0") { index += 1 } else { try readDigits() }
        if peek == UInt8(ascii: ".") { index += 1; try readDigits() }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            index += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
            try readDigits()
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func readDigits() throws(JSONSyntaxError) {
        guard let byte = peek, (0x30...0x39).contains(byte) else { throw unexpected("a value") }
        while let byte = peek, (0x30...0x39).contains(byte) { index += 1 }
    }

    private mutating func readString() throws(JSONSyntaxError) -> String {
        try expect(UInt8(ascii: "\""))
        let bytes = self.bytes
        var scalars = String.UnicodeScalarView()
        var run = index
        /// Appends the unescaped bytes since `run`, which must be valid UTF-8.
        func flush(to end: Int) throws(JSONSyntaxError) {
            guard run < end else { return }
            guard let text = String(validating: bytes[run..<end], as: UTF8.self) else {
                throw JSONSyntaxError("invalid UTF-8 in a string before byte \(end)")
            }
            scalars.append(contentsOf: text.unicodeScalars)
        }
        while let byte = peek {
            switch byte {
            case UInt8(ascii: "\""):
                try flush(to: index)
                index += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                try flush(to: index)
                index += 1
                scalars.append(try readEscape())
                run = index
            case 0x00..<0x20:
                throw JSONSyntaxError("a control character in a string at byte \(index)")
            default:
                index += 1
            }
        }
        throw unexpected("'\"'")
    }

    /// The escape after a backslash; a `\u` high surrogate must be followed by its low half.
    private mutating func readEscape() throws(JSONSyntaxError) -> Unicode.Scalar {
        guard let byte = peek else { throw unexpected("an escape") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): return Unicode.Scalar(byte)
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let unit = try readHex4()
            if (0xD800..<0xDC00).contains(unit) {
                try expect(UInt8(ascii: "\\"))
                try expect(UInt8(ascii: "u"))
                let low = try readHex4()
                guard (0xDC00..<0xE000).contains(low) else { throw JSONSyntaxError("a lone surrogate before byte \(index)") }
                return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!
            }
            guard let scalar = Unicode.Scalar(unit) else { throw JSONSyntaxError("a lone surrogate before byte \(index)") }
            return scalar
        default:
            throw JSONSyntaxError("an unknown escape before byte \(index)")
        }
    }

    private mutating func readHex4() throws(JSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = peek, let digit = hexDigitValue(byte) else { throw unexpected("a hex digit") }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}

/// Why a JSON text could not be read.
struct JSONSyntaxError: Error, Equatable {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// The value of one hex digit (either case).
func hexDigitValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}
