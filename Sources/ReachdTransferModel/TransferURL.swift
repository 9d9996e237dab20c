/// The parts of an `http`/`https` URL the scheduler needs: the host whose route gates the job.
public struct TransferURL: Hashable, Sendable {
    public var scheme: String
    /// Host name or IP literal (IPv6 without brackets).
    public var host: String
    public var port: Int?

    /// Why a URL is refused; the message is shown to the client as is.
    public struct Invalid: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Accepts absolute http(s) URLs with a host; refuses credentials in the URL, spaces and control characters.
    public init(_ text: String) throws(Invalid) {
        func invalid(_ why: String) -> Invalid { Invalid(description: "invalid URL \"\(text.prefix(200))\": \(why)") }
        guard text.utf8.count <= 8192 else { throw invalid("longer than 8192 bytes") }
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7f || $0.value > 0x7e }) else {
            throw invalid("spaces, control or non-ASCII characters must be percent-encoded")
        }
        guard let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") else {
            throw invalid("expected http://HOST/… or https://HOST/…")
        }
        let scheme = text[..<colon].lowercased()
        guard scheme == "http" || scheme == "https" else { throw invalid("only http and https are supported") }
        let rest = text[text.index(colon, offsetBy: 3)...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.contains("@") else { throw invalid("credentials do not belong in URLs (use a netrc file)") }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw invalid("unterminated IPv6 literal") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            guard host.isEmpty || host.contains(":") else { throw invalid("brackets hold IPv6 addresses only") }
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("unexpected text after the IPv6 literal") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { throw invalid("no host") }
        guard host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_" || $0 == ":" }) else {
            throw invalid("bad character in host")
        }
        var port: Int?
        if let portText, !portText.isEmpty {
            guard let value = decimal(portText), (1...65535).contains(value) else { throw invalid("bad port") }
            port = Int(value)
        }
        self.scheme = scheme
        self.host = host.lowercased()
        self.port = port
    }
}

/// Checks an output path given by a client (the daemon has no working directory of the client's).
public enum OutputPath {
    public struct Invalid: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Absolute, names a file (not a directory), no `.`/`..` components, no NUL, at most PATH_MAX.
    public static func validate(_ path: String) throws(Invalid) {
        func invalid(_ why: String) -> Invalid { Invalid(description: "invalid output path \"\(path.prefix(200))\": \(why)") }
        guard path.hasPrefix("/") else { throw invalid("must be absolute") }
        guard path.utf8.count < 4096 else { throw invalid("longer than PATH_MAX") }
        guard !path.utf8.contains(0) else { throw invalid("contains NUL") }
        guard !path.hasSuffix("/") else { throw invalid("names a directory") }
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        guard let last = components.last else { throw invalid("names a directory") }
        guard !components.contains(where: { $0 == "." || $0 == ".." }) else { throw invalid("contains . or .. components") }
        guard last.utf8.count <= 200 else { throw invalid("file name longer than 200 bytes") }
    }
}
