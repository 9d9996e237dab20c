/// A proxy server as a proxy URL names it, in curl's syntax: `http://[user:password@]host[:port]`,
/// `socks5://…` or `socks5h://…` (both hand the proxy the host name to resolve: async-http-client's SOCKS client
/// does); a bare `host[:port]` is an http proxy. The port defaults to 1080, as curl's does. Credentials are percent-decoded; they go to the proxy
/// only, and `description` never shows them.
public struct ProxyServer: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable {
        /// Plain http requests are forwarded (absolute-form request targets); https goes through `CONNECT`.
        case http
        case socks5
        case socks5h

        public var isSOCKS: Bool { self != .http }
    }

    public var kind: Kind
    /// Host name or IP literal (IPv6 without brackets), lower case.
    public var host: String
    public var port: Int
    public var login: String?
    public var password: String?

    /// Why a proxy URL is refused; the message is shown as is.
    public struct Invalid: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Parses a proxy URL (at most 2,048 bytes, printable ASCII).
    public init(_ text: String) throws(Invalid) {
        // The URL itself may hold a password: never quote it.
        func invalid(_ why: String) -> Invalid { Invalid(description: "invalid proxy URL: \(why)") }
        guard !text.isEmpty, text.utf8.count <= 2048 else { throw invalid("empty, or longer than 2048 bytes") }
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7f }) else {
            throw invalid("spaces, control or non-ASCII characters must be percent-encoded")
        }
        var rest = Substring(text)
        kind = .http
        if let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") {
            let scheme = text[..<colon].lowercased()
            switch scheme {
            case "http": kind = .http
            case "socks5": kind = .socks5
            case "socks5h": kind = .socks5h
            case "https": throw invalid("TLS to the proxy itself (https://) is not supported; https origins go through an http:// proxy with CONNECT")
            case "socks4", "socks4a", "socks": throw invalid("SOCKS4 is not supported; use socks5:// or socks5h://")
            default: throw invalid("the scheme must be http, socks5 or socks5h")
            }
            rest = text[text.index(colon, offsetBy: 3)...]
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard authority.count == rest.count || rest[authority.endIndex...].allSatisfy({ $0 == "/" }) else {
            throw invalid("a proxy URL has no path")
        }
        var hostPort = authority
        if let at = authority.lastIndex(of: "@") {
            let userinfo = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
            let colon = userinfo.firstIndex(of: ":")
            guard let login = Self.percentDecoded(userinfo[..<(colon ?? userinfo.endIndex)]),
                  let password = colon.map({ Self.percentDecoded(userinfo[userinfo.index(after: $0)...]) }) ?? "" else {
                throw invalid("bad percent-encoding in the credentials")
            }
            guard !login.isEmpty else { throw invalid("credentials without a user name") }
            self.login = login
            self.password = password
        }
        guard !kind.isSOCKS || login == nil else { throw invalid("credentials for a SOCKS5 proxy are not supported") }
        guard let endpoint = HostAndPort(hostPort) else { throw invalid("expected HOST or HOST:PORT (1 to 65535)") }
        host = endpoint.host
        port = endpoint.port ?? 1080
    }

    /// The proxy's URL without credentials, as jobs show it.
    public var description: String {
        "\(kind.rawValue)://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// The URL with its credentials (percent-encoded), as a job keeps it.
    public var url: String {
        guard let login else { return description }
        let userinfo = Self.percentEncoded(login) + (password.map { ":" + Self.percentEncoded($0) } ?? "")
        return "\(kind.rawValue)://\(userinfo)@\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// The proxy's credentials with `fallback` (a netrc's for its host) where the URL has none.
    public func credentials(or fallback: Credentials?) -> Credentials? {
        guard let login else { return fallback }
        return .basic(login: login, password: password ?? "")
    }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); index = utf8.index(after: index); continue }
            let high = utf8.index(after: index)
            guard high < utf8.endIndex, utf8.index(after: high) < utf8.endIndex,
                  let h = hexValue(utf8[high]), let l = hexValue(utf8[utf8.index(after: high)]) else { return nil }
            bytes.append(h << 4 | l)
            index = utf8.index(high, offsetBy: 2)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in text.utf8 {
            let plain = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || Array("-._~".utf8).contains(byte)
            if plain { out.append(byte) } else { out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]] }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
struct HostAndPort {
    var host: String
    var port: Int?

    init?(_ text: Substring) {
        var portText: Substring?
        let host: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            guard host.contains(":") else { return nil }
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else if let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        } else {
            host = text
        }
        guard !host.isEmpty, host.utf8.count <= 253,
              host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_" || $0 == ":") }) else { return nil }
        if let portText {
            guard portText.count <= 5, let value = Int(portText), (1...65535).contains(value) else { return nil }
            port = value
        }
        self.host = host.lowercased()
    }
}
