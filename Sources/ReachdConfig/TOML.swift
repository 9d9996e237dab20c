/// A TOML value, as far as reachd's configuration uses TOML.
public enum TOMLValue: Hashable, Sendable {
    case string(String)
    case integer(Int64)
    case float(Double)
    case bool(Bool)
    case array([TOMLValue])
    case table(TOMLTable)

    public var string: String? { if case .string(let v) = self { v } else { nil } }
    public var integer: Int64? { if case .integer(let v) = self { v } else { nil } }
    public var bool: Bool? { if case .bool(let v) = self { v } else { nil } }
    public var array: [TOMLValue]? { if case .array(let v) = self { v } else { nil } }
    public var table: TOMLTable? { if case .table(let v) = self { v } else { nil } }
}

/// A TOML table: keys in the order they were written.
public struct TOMLTable: Hashable, Sendable {
    public private(set) var keys: [String] = []
    private var values: [String: TOMLValue] = [:]

    public init() {}

    public subscript(key: String) -> TOMLValue? {
        get { values[key] }
        set {
            if values[key] == nil, newValue != nil { keys.append(key) }
            if newValue == nil { keys.removeAll { $0 == key } }
            values[key] = newValue
        }
    }
}

/// A TOML syntax error with its line.
public struct TOMLError: Error, Hashable, Sendable, CustomStringConvertible {
    public var line: Int
    public var message: String
    public var description: String { "line \(line): \(message)" }
}

/// Parses the subset of TOML 1.0 a configuration file needs: comments, `key = value` with bare, quoted and
/// dotted keys, `[table]` and `[[array of tables]]` headers, basic and literal strings, integers, floats,
/// booleans and (multi-line) arrays. Dates and multi-line strings are refused with a clear error.
///
/// Hand-written rather than TOMLKit because TOMLKit links the whole of Foundation (and ICU) into the daemon,
/// which alone costs more resident memory than reachd's budget leaves.
public enum TOMLParser {
    public static func parse(_ text: String) throws -> TOMLTable {
        var parser = Parser(Array(text.utf8))
        return try parser.document()
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0
        var line = 1
        var root = TOMLTable()
        /// Path of the current table; the last element indexes into an array of tables when `arrayTable`.
        var current: [String] = []
        var definedTables: Set<[String]> = []

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        func error(_ message: String) -> TOMLError { TOMLError(line: line, message: message) }

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpaces() {
            while let c = peek, c == 0x20 || c == 0x09 { index += 1 }
        }

        /// Skips spaces, comments and newlines.
        mutating func skipBlank() {
            while let c = peek {
                if c == 0x20 || c == 0x09 || c == 0x0D { index += 1 }
                else if c == 0x0A { index += 1; line += 1 }
                else if c == UInt8(ascii: "#") { while let d = peek, d != 0x0A { index += 1 } }
                else { return }
            }
        }

        mutating func endOfLine() throws {
            skipSpaces()
            if peek == UInt8(ascii: "#") { while let d = peek, d != 0x0A { index += 1 } }
            if peek == 0x0D { index += 1 }
            guard let c = peek else { return }
            guard c == 0x0A else { throw error("unexpected text after the value") }
        }

        mutating func document() throws -> TOMLTable {
            while true {
                skipBlank()
                guard let c = peek else { return root }
                if c == UInt8(ascii: "[") {
                    try header()
                } else {
                    try keyValue()
                }
                try endOfLine()
            }
        }

        mutating func header() throws {
            index += 1
            let isArray = peek == UInt8(ascii: "[")
            if isArray { index += 1 }
            skipSpaces()
            let path = try key()
            skipSpaces()
            guard peek == UInt8(ascii: "]") else { throw error("expected ] to close the table header") }
            index += 1
            if isArray {
                guard peek == UInt8(ascii: "]") else { throw error("expected ]] to close the array-of-tables header") }
                index += 1
                try appendArrayTable(at: path)
            } else {
                guard definedTables.insert(path).inserted else { throw error("table [\(path.joined(separator: "."))] is defined twice") }
                try withTable(path) { _ in }
            }
            current = path
        }

        mutating func keyValue() throws {
            let path = try key()
            skipSpaces()
            guard peek == UInt8(ascii: "=") else { throw error("expected = after the key \(path.joined(separator: "."))") }
            index += 1
            skipSpaces()
            let value = try self.value()
            let keyName = path.last!
            let duplicate = error("key \(path.joined(separator: ".")) is defined twice")
            try withTable(current + path.dropLast()) { table in
                guard table[keyName] == nil else { throw duplicate }
                table[keyName] = value
            }
        }

        mutating func key() throws -> [String] {
            var parts: [String] = []
            repeat {
                skipSpaces()
                if peek == UInt8(ascii: "\"") {
                    parts.append(try basicString())
                } else if peek == UInt8(ascii: "'") {
                    parts.append(try literalString())
                } else {
                    let start = index
                    while let c = peek, isBareKeyByte(c) { index += 1 }
                    guard index > start else { throw error("expected a key") }
                    parts.append(String(decoding: bytes[start..<index], as: UTF8.self))
                }
                skipSpaces()
            } while consume(UInt8(ascii: "."))
            return parts
        }

        func isBareKeyByte(_ c: UInt8) -> Bool {
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c == 0x2D
        }

        mutating func consume(_ c: UInt8) -> Bool {
            guard peek == c else { return false }
            index += 1
            return true
        }

        mutating func value() throws -> TOMLValue {
            guard let c = peek else { throw error("expected a value") }
            switch c {
            case UInt8(ascii: "\""):
                if bytes[index...].starts(with: Array("\"\"\"".utf8)) { throw error("multi-line strings are not supported") }
                return .string(try basicString())
            case UInt8(ascii: "'"):
                if bytes[index...].starts(with: Array("'''".utf8)) { throw error("multi-line strings are not supported") }
                return .string(try literalString())
            case UInt8(ascii: "["):
                return try arrayValue()
            case UInt8(ascii: "{"):
                throw error("inline tables are not supported; use a [table] header")
            default:
                let start = index
                while let d = peek, d != 0x20, d != 0x09, d != 0x0A, d != 0x0D, d != UInt8(ascii: ","),
                      d != UInt8(ascii: "]"), d != UInt8(ascii: "#") { index += 1 }
                let word = String(decoding: bytes[start..<index], as: UTF8.self)
                return try scalar(word)
            }
        }

        func scalar(_ word: String) throws -> TOMLValue {
            if word == "true" { return .bool(true) }
            if word == "false" { return .bool(false) }
            let digits = word.replacingUnderscores()
            if let n = Int64(digits) { return .integer(n) }
            if digits.hasPrefix("0x"), let n = Int64(digits.dropFirst(2), radix: 16) { return .integer(n) }
            if word.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let d = Double(digits) { return .float(d) }
            if word.contains("-") && word.first?.isNumber == true && word.count >= 10 { throw error("dates are not supported: \(word)") }
            throw error("cannot read the value \(word.isEmpty ? "(nothing)" : word); strings need quotes")
        }

        mutating func arrayValue() throws -> TOMLValue {
            index += 1
            var items: [TOMLValue] = []
            while true {
                skipBlank()
                if consume(UInt8(ascii: "]")) { return .array(items) }
                items.append(try value())
                skipBlank()
                if consume(UInt8(ascii: ",")) { continue }
                guard consume(UInt8(ascii: "]")) else { throw error("expected , or ] in the array") }
                return .array(items)
            }
        }

        mutating func basicString() throws -> String {
            index += 1
            var out: [UInt8] = []
            while let c = peek {
                index += 1
                switch c {
                case UInt8(ascii: "\""):
                    return String(decoding: out, as: UTF8.self)
                case 0x0A:
                    throw error("unterminated string")
                case UInt8(ascii: "\\"):
                    guard let e = peek else { throw error("unterminated string") }
                    index += 1
                    switch e {
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(e)
                    case UInt8(ascii: "u"), UInt8(ascii: "U"):
                        let width = e == UInt8(ascii: "u") ? 4 : 8
                        guard index + width <= bytes.count,
                              let code = UInt32(String(decoding: bytes[index..<index + width], as: UTF8.self), radix: 16),
                              let scalar = Unicode.Scalar(code) else { throw error("bad \\u escape") }
                        index += width
                        out.append(contentsOf: Array(String(Character(scalar)).utf8))
                    default:
                        throw error("unknown escape \\\(Character(Unicode.Scalar(e)))")
                    }
                default:
                    out.append(c)
                }
            }
            throw error("unterminated string")
        }

        mutating func literalString() throws -> String {
            index += 1
            let start = index
            while let c = peek, c != UInt8(ascii: "'") {
                guard c != 0x0A else { throw error("unterminated string") }
                index += 1
            }
            guard peek != nil else { throw error("unterminated string") }
            defer { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        /// Runs `body` on the table at `path`, descending into the last element of arrays of tables.
        mutating func withTable(_ path: [String], _ body: (inout TOMLTable) throws -> Void) throws {
            try Self.descend(&root, path[...], line: line, body)
        }

        static func descend(_ table: inout TOMLTable, _ path: ArraySlice<String>, line: Int, _ body: (inout TOMLTable) throws -> Void) throws {
            guard let head = path.first else { return try body(&table) }
            switch table[head] {
            case nil:
                var child = TOMLTable()
                try descend(&child, path.dropFirst(), line: line, body)
                table[head] = .table(child)
            case .table(var child)?:
                try descend(&child, path.dropFirst(), line: line, body)
                table[head] = .table(child)
            case .array(var items)? where items.last?.table != nil:
                var child = items.removeLast().table!
                try descend(&child, path.dropFirst(), line: line, body)
                items.append(.table(child))
                table[head] = .array(items)
            default:
                throw TOMLError(line: line, message: "\(head) is a value, not a table")
            }
        }

        mutating func appendArrayTable(at path: [String]) throws {
            let name = path.last!
            let line = self.line
            try withTable(Array(path.dropLast())) { table in
                switch table[name] {
                case nil: table[name] = .array([.table(TOMLTable())])
                case .array(var items)? where items.allSatisfy({ $0.table != nil }):
                    items.append(.table(TOMLTable()))
                    table[name] = .array(items)
                default: throw TOMLError(line: line, message: "\(name) is not an array of tables")
                }
            }
        }
    }
}

extension String {
    fileprivate func replacingUnderscores() -> String {
        String(filter { $0 != "_" })
    }
}
