/// Credentials for a server, from a netrc file. They are looked up for each request and never stored,
/// logged or shown.
public enum Credentials: Hashable, Sendable {
    case basic(login: String, password: String)
    /// A netrc entry whose login is `bearer` carries a token: `Authorization: Bearer TOKEN`.
    case bearer(token: String)

    /// The `Authorization` header value.
    public var authorization: String {
        switch self {
        case .basic(let login, let password): "Basic " + Base64.encode(Array("\(login):\(password)".utf8))
        case .bearer(let token): "Bearer " + token
        }
    }
}

/// A netrc file (`machine NAME login USER password SECRET`, `default …`; `account` and `macdef` are
/// skipped), as curl and ftp read it.
public struct Netrc: Hashable, Sendable {
    public struct Entry: Hashable, Sendable {
        /// nil for `default`.
        public var machine: String?
        public var login: String?
        public var password: String?
    }

    public var entries: [Entry]

    public init(_ text: String) {
        var entries: [Entry] = []
        var tokens = Self.tokens(text)[...]
        var current: Entry?
        while let token = tokens.popFirst() {
            switch token {
            case "machine", "default":
                if let current { entries.append(current) }
                current = Entry(machine: token == "machine" ? tokens.popFirst()?.lowercased() : nil)
            case "login": current?.login = tokens.popFirst()
            case "password": current?.password = tokens.popFirst()
            case "account": _ = tokens.popFirst()
            case "macdef":
                // A macro runs to the next empty line: the tokenizer cannot see it, so stop reading here.
                if let current { entries.append(current) }
                self.entries = entries
                return
            default: break
            }
        }
        if let current { entries.append(current) }
        self.entries = entries
    }

    /// The credentials of `host`'s own entry (no `default`); nil without one, or without a password.
    public func credentials(forMachine host: String) -> Credentials? {
        guard let entry = entries.first(where: { $0.machine == host.lowercased() }), let password = entry.password else { return nil }
        if entry.login?.lowercased() == "bearer" { return .bearer(token: password) }
        return .basic(login: entry.login ?? "", password: password)
    }

    /// The credentials for `host`: its own entry first, else `default`; nil without a password.
    public func credentials(for host: String) -> Credentials? {
        let entry = entries.first { $0.machine == host.lowercased() } ?? entries.first { $0.machine == nil }
        guard let entry, let password = entry.password else { return nil }
        if entry.login?.lowercased() == "bearer" { return .bearer(token: password) }
        return .basic(login: entry.login ?? "", password: password)
    }

    /// Whitespace-separated tokens; double quotes group, backslash escapes.
    private static func tokens(_ text: String) -> [String] {
        var tokens: [String] = []
        var current = "", quoted = false, escaped = false, inToken = false
        for character in text {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
                inToken = true
            } else if character == "\"" {
                quoted.toggle()
                inToken = true
            } else if character.isWhitespace && !quoted {
                if inToken { tokens.append(current) }
                current = ""
                inToken = false
            } else {
                current.append(character)
                inToken = true
            }
        }
        if inToken { tokens.append(current) }
        return tokens
    }
}

/// RFC 4648 base64, for Basic credentials.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

    static func encode(_ bytes: [UInt8]) -> String {
        var out = ""
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * UInt32($1.offset)) }
            for position in 0..<4 {
                out.append(position <= chunk.count ? alphabet[Int(value >> (18 - 6 * UInt32(position)) & 0x3f)] : "=")
            }
            index += 3
        }
        return out
    }
}
