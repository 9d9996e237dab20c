import ReachdModel

/// Which proxy a request goes through: as curl reads its environment (`http_proxy` in lower case only,
/// `https_proxy`/`HTTPS_PROXY`, `all_proxy`/`ALL_PROXY`, `no_proxy`/`NO_PROXY`), or as `[downloads] proxy` and
/// `no_proxy` say (one proxy for both schemes).
public struct ProxySettings: Hashable, Sendable {
    public var http: ProxyServer?
    public var https: ProxyServer?
    public var noProxy: NoProxyList

    /// The variables `environment` reads.
    public static let environmentNames = ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"]

    public init(http: ProxyServer?, https: ProxyServer?, noProxy: NoProxyList = NoProxyList("")) {
        self.http = http
        self.https = https
        self.noProxy = noProxy
    }

    /// The environment's settings (nil when it names no usable proxy), and per scheme (`http`, `https`) the error of
    /// the variable that decides it when it cannot be used, naming the variable (never its value: it may hold a
    /// password). A scheme whose variable cannot be used has no proxy in the settings: the caller refuses its URLs.
    public static func environment(_ variables: [String: String]) -> (settings: ProxySettings?, unusable: [String: ProxyServer.Invalid]) {
        var unusable: [String: ProxyServer.Invalid] = [:]
        func server(for scheme: String, _ names: [String]) -> ProxyServer? {
            for name in names {
                guard let value = variables[name], !value.isEmpty else { continue }
                do { return try ProxyServer(value) } catch {
                    unusable[scheme] = ProxyServer.Invalid(description: "\(name): \(error)")
                    return nil
                }
            }
            return nil
        }
        let http = server(for: "http", ["http_proxy", "all_proxy", "ALL_PROXY"])
        let https = server(for: "https", ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"])
        guard http != nil || https != nil else { return (nil, unusable) }
        let noProxy = NoProxyList(variables["no_proxy"] ?? variables["NO_PROXY"] ?? "")
        return (ProxySettings(http: http, https: https, noProxy: noProxy), unusable)
    }

    /// The proxy for `url`; nil: straight to the origin.
    public func proxy(for url: TransferURL) -> ProxyServer? {
        guard !noProxy.excludes(host: url.host) else { return nil }
        return url.scheme == "https" ? https : http
    }
}

/// `no_proxy`, as curl reads it: comma- (or space-) separated entries; `*` alone matches every host; a name matches
/// itself and every name below it (a leading dot, and trailing dots, are ignored); an IP address matches itself,
/// `ADDRESS/BITS` its network (for IP literal hosts only, as curl resolves nothing here).
public struct NoProxyList: Hashable, Sendable {
    public private(set) var matchesEverything = false
    public private(set) var names: [String] = []
    public private(set) var networks: [Network] = []

    public struct Network: Hashable, Sendable {
        public var address: IPAddress
        public var bits: Int

        func contains(_ other: IPAddress) -> Bool {
            guard other.family == address.family else { return false }
            let whole = bits / 8, rest = bits % 8
            guard other.bytes.prefix(whole) == address.bytes.prefix(whole) else { return false }
            guard rest > 0 else { return true }
            let mask = UInt8(0xff) << (8 - rest)
            return other.bytes[whole] & mask == address.bytes[whole] & mask
        }
    }

    /// Reads at most 256 entries; entries that are neither a name nor an address are skipped, as curl does.
    public init(_ text: String) {
        let entries = text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).prefix(256)
        // As curl: `*` counts only alone; in a list it is an entry that matches nothing.
        if entries.count == 1, entries[0] == "*" { matchesEverything = true }
        for entry in entries {
            var item = entry.lowercased()
            while item.hasSuffix(".") { item.removeLast() }
            var bare = Substring(item)
            var bits: Int?
            if let slash = bare.firstIndex(of: "/") {
                guard let prefix = Int(bare[bare.index(after: slash)...]) else { continue }
                bits = prefix
                bare = bare[..<slash]
            }
            if bare.hasPrefix("["), bare.hasSuffix("]") { bare = bare.dropFirst().dropLast() }
            if let address = IPAddress(String(bare)) {
                let whole = address.bytes.count * 8
                let prefix = bits ?? whole
                if (0...whole).contains(prefix) { networks.append(Network(address: address, bits: prefix)) }
            } else if bits == nil {
                let name = bare.hasPrefix(".") ? String(bare.dropFirst()) : String(bare)
                if !name.isEmpty { names.append(name) }
            }
        }
    }

    /// Whether requests to `host` (a name, or an IP literal without brackets) skip the proxy.
    public func excludes(host: String) -> Bool {
        if matchesEverything { return true }
        var host = host.lowercased()
        while host.hasSuffix(".") { host.removeLast() }
        if let address = IPAddress(host) { return networks.contains { $0.contains(address) } }
        return names.contains { host == $0 || host.hasSuffix("." + $0) }
    }
}

/// The proxy a job's requests go through: the job's own (`Job.proxy`: a URL, or `none`), else the instance's settings,
/// else what the desktop's settings say for the job's URL (for every request of the job, its redirects' too).
public struct JobProxy: Hashable, Sendable {
    /// What a job asks for to go straight to the server, whatever the instance's settings.
    public static let none = "none"

    /// The job's own proxy, as `Job.proxy` holds it.
    public var asked: String?
    /// The instance's settings.
    public var instance: ProxySettings?
    /// The desktop's answer for the job's URL, asked only where neither of the others names a proxy.
    public var desktop: DesktopProxy?

    public init(asked: String?, instance: ProxySettings?, desktop: DesktopProxy? = nil) {
        self.asked = asked
        self.instance = instance
        self.desktop = desktop
    }

    /// Checks a job's proxy as a client gives it: `none`, or a proxy URL.
    public static func validate(_ text: String) throws(ProxyServer.Invalid) {
        guard text != none else { return }
        _ = try ProxyServer(text)
    }

    /// The proxy for a request to `url`; nil: straight to the server.
    public func proxy(for url: String) -> ProxyServer? {
        switch asked {
        case Self.none?: nil
        case let text?: try? ProxyServer(text)
        case nil where instance != nil: (try? TransferURL(url)).flatMap { instance?.proxy(for: $0) }
        case nil: desktop?.server
        }
    }

    /// The host whose route decides the cost of requests to `url`: the proxy's when they go through one, else the server's.
    public func gatingHost(for url: String) -> String? {
        proxy(for: url)?.host ?? (try? TransferURL(url))?.host
    }
}

/// What an http proxy that forwards a request answers about its credentials.
public enum ProxyAnswer {
    /// A 407 (RFC 9110 §15.5.8). A 401 is the server's: tinyproxy answers wrong credentials with one, which reads as
    /// the server's refusal.
    public static func refusesCredentials(status: Int) -> Bool { status == 407 }
}
