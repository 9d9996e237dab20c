/// Where a daemon serves its Prometheus metrics: `HOST:PORT` (an IPv4 address, `[IPv6]` or a name such as
/// `localhost`) or an absolute Unix socket path.
public enum MetricsAddress: Hashable, Sendable, CustomStringConvertible {
    case tcp(host: String, port: Int)
    case unix(path: String)

    /// Parses the configuration's text; nil when it is neither form.
    public init?(_ text: String) {
        if text.hasPrefix("/") {
            guard text.utf8.count < 108 else { return nil }  // sockaddr_un's sun_path
            self = .unix(path: text)
            return
        }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { return nil }
        var host = text[..<colon]
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count > 2 else { return nil }
            host = host.dropFirst().dropLast()
            guard host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
        } else {
            guard !host.isEmpty, !host.contains(":"),
                  host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }) else { return nil }
        }
        self = .tcp(host: String(host), port: port)
    }

    /// The TCP port (0: any free one), nil for a socket path.
    public var port: Int? {
        if case .tcp(_, let port) = self { return port }
        return nil
    }

    public var description: String {
        switch self {
        case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path): path
        }
    }
}
