/// What an HTTP connectivity check says about the path to the internet (as NetworkManager reports it).
public enum Connectivity: String, Hashable, Sendable, Codable, CaseIterable {
    /// No check configured, or not done yet.
    case unknown
    /// Not reachable: nothing to check.
    case none
    /// The check was answered with something else than expected: a captive portal (or a proxy) is in the way.
    case portal
    /// Reachable, but the check got no answer (timeout, refused): the network goes nowhere.
    case limited
    /// The check was answered as expected.
    case full
}

/// The configured connectivity check: where to ask and what the answer must be.
public struct ConnectivityCheck: Hashable, Sendable {
    public var url: ProbeURL
    /// The status code a working internet answers with (default 204, as `generate_204` endpoints do).
    public var expectStatus: Int
    /// When set, the body must be exactly this text.
    public var expectBody: String?
    /// How long one check may take, in seconds.
    public var timeoutSeconds: Double
    /// How often a check that succeeded is repeated, in seconds; 0 means only after network changes.
    public var intervalSeconds: Double

    public init(url: ProbeURL, expectStatus: Int = 204, expectBody: String? = nil, timeoutSeconds: Double = 5, intervalSeconds: Double = 300) {
        self.url = url
        self.expectStatus = expectStatus
        self.expectBody = expectBody
        self.timeoutSeconds = timeoutSeconds
        self.intervalSeconds = intervalSeconds
    }

    /// What one check's outcome means.
    public func connectivity(for outcome: ProbeOutcome) -> Connectivity {
        switch outcome {
        case .failed:
            return .limited
        case .response(let status, let body):
            guard status == expectStatus else { return .portal }
            if let expectBody, String(decoding: body, as: UTF8.self) != expectBody { return .portal }
            return .full
        }
    }

    /// Seconds to wait before the check after `attempt` failed ones (1, 2, 4, ... up to the interval or 60 s).
    public func retryDelay(afterFailures attempt: Int) -> Double {
        let cap = intervalSeconds > 0 ? min(intervalSeconds, 60) : 60
        return min(cap, Double(1 << min(attempt, 16)))
    }
}

/// The result of one HTTP check.
public enum ProbeOutcome: Hashable, Sendable {
    /// A complete response: its status and (the first 4 KiB of) its body.
    case response(status: Int, body: [UInt8])
    /// No complete response: why.
    case failed(String)
}

/// An `http://` URL for the connectivity check.
public struct ProbeURL: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// Path and query, starting with `/`.
    public var path: String

    /// Parses `http://HOST[:PORT][/PATH]` (IPv6 literals in brackets); nil for anything else.
    public init?(_ text: String) {
        guard text.hasPrefix("http://") else { return nil }
        let rest = text.dropFirst("http://".count)
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var remainder = String(rest[authorityEnd...])
        if remainder.isEmpty || remainder.hasPrefix("?") { remainder = "/" + remainder }
        guard !authority.isEmpty, !authority.contains("@"), !remainder.contains(where: { $0 == " " || $0 == "#" }) else { return nil }
        var host = Substring(authority)
        var port = 80
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let value = Int(after.dropFirst()) else { return nil }
                port = value
            }
        } else if let colon = authority.lastIndex(of: ":") {
            guard let value = Int(authority[authority.index(after: colon)...]) else { return nil }
            host = authority[..<colon]
            port = value
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        self.host = String(host)
        self.port = port
        self.path = remainder
    }

    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "http://\(shownHost)\(port == 80 ? "" : ":\(port)")\(path)"
    }
}
