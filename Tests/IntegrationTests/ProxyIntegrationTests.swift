import Foundation
import ReachdTransferModel
import XCTest

/// Transfers through real proxies in the peer namespace: Debian's tinyproxy (http forwarded, https through `CONNECT`),
/// squid asking for Basic credentials (Debian's tinyproxy 1.11 answers wrong ones with a 401, the server's status), and
/// microsocks (SOCKS5). The origin, nginx on `mirror.test`, cannot be reached from reachd-transfers'
/// namespace but through a proxy (`ip route add unreachable`), as on a network where only a proxy reaches out; except
/// `direct.test`, which `no_proxy` names. nginx logs who asked (`$remote_addr`: the host namespace's own address when
/// a request came straight) and the credentials each request carried, so that none reaches the origin.
final class ProxyIntegrationTests: XCTestCase {
    private var lab: TransferLab!
    private static let proxyAddress = "203.0.113.81"
    private static let directAddress = "203.0.113.82"
    private static let password = "pr0xy-pa55-\(getpid())"
    private var originLog: String { lab.lab.directory + "/origin.log" }
    private var tls: String { lab.lab.directory + "/tls" }
    private let plainProxy = "http://proxy.test:3128"
    private let guardedProxy = "http://proxy.test:3129"

    override func setUpWithError() throws {
        lab = try TransferLab()
        let names = ["mirror.test": TransferLab.serverAddress, "proxy.test": Self.proxyAddress, "direct.test": Self.directAddress,
                     "side.test": Self.directAddress]
        try lab.lab.hostsFile(names)
        try lab.lab.peerHostsFile(names)
        for address in [Self.proxyAddress, Self.directAddress] { try lab.lab.peerIP("addr add \(address)/32 dev lo") }
        // Only the proxies reach the origin.
        try lab.lab.ip("route add unreachable \(TransferLab.serverAddress)/32")
        _ = try lab.makeCertificates(for: ["mirror.test"])
        try FileManager.default.createDirectory(atPath: lab.www + "/up", withIntermediateDirectories: true)
        try lab.startNginx(servers: """
            log_format asked '$remote_addr $request_method $uri $status "$http_authorization" "$http_proxy_authorization"';
            access_log \(originLog) asked;
            server {
              listen \(TransferLab.serverAddress):8080; listen \(Self.directAddress):8080;
              root \(lab.www);
              location /up/ { dav_methods PUT; }
              location = /moved { return 302 http://mirror.test:8080/f.bin; }
              location = /escape { return 302 http://x@side.test:8080/escaped.bin; }
            }
            server {
              listen \(TransferLab.serverAddress):8443 ssl;
              ssl_certificate \(tls)/server.pem; ssl_certificate_key \(tls)/server.key;
              root \(lab.www);
            }
            """, probePort: 8443)
        try startTinyproxy(port: 3128)
    }

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    /// tinyproxy on proxy.test:`port`, tunnels to 8443 allowed.
    private func startTinyproxy(port: Int) throws {
        let conf = lab.lab.directory + "/tinyproxy-\(port).conf"
        try """
            User nobody
            Group nogroup
            Port \(port)
            Listen \(Self.proxyAddress)
            Timeout 60
            MaxClients 16
            ConnectPort 8443
            LogLevel Connect
            """.write(toFile: conf, atomically: true, encoding: .utf8)
        try lab.startPeerServer(["/usr/bin/tinyproxy", "-d", "-c", conf], address: Self.proxyAddress, port: port)
    }

    /// squid on proxy.test:3129, serving only `alice` with `password` (Basic).
    private func startSquid() throws {
        let directory = lab.lab.directory
        try lab.lab.run("printf 'alice:%s\\n' \"$(openssl passwd -apr1 '\(Self.password)')\" > \(directory)/squid.passwd && chmod 644 \(directory)/squid.passwd")
        try """
            http_port \(Self.proxyAddress):3129
            pid_filename none
            cache_log stdio:/dev/null
            access_log none
            cache deny all
            cache_mem 8 MB
            shutdown_lifetime 0 seconds
            auth_param basic program /usr/lib/squid/basic_ncsa_auth \(directory)/squid.passwd
            auth_param basic children 2
            acl authenticated proxy_auth REQUIRED
            http_access allow authenticated
            http_access deny all
            """.write(toFile: directory + "/squid.conf", atomically: true, encoding: .utf8)
        try lab.startPeerServer(["/usr/sbin/squid", "-N", "-f", directory + "/squid.conf"], address: Self.proxyAddress, port: 3129)
    }

    private var originRequests: [String] { ((try? String(contentsOfFile: originLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }

    /// The origin's log lines for `path`.
    private func asked(_ path: String) -> [String] { originRequests.filter { $0.contains(" \(path) ") } }

    private func completes(_ id: String, _ what: String) throws {
        try lab.waitFor(id, what) { $0.state == .completed }
    }

    func testTheUsersProxyVariablesCarryDownloadsUploadsAndFetchesAndNoProxyGoesStraight() throws {
        try lab.startDaemon(config: "[downloads]\nca_file = \"\(tls)/ca.pem\"\n")
        let plainSum = try lab.serve("f.bin", bytes: 400_000)
        let tlsSum = try lab.serve("t.bin", bytes: 300_000, seed: 2)
        let environment = ["http_proxy": plainProxy, "HTTPS_PROXY": plainProxy, "no_proxy": "localhost,.direct.test"]
        func add(_ url: String, _ name: String) throws -> String {
            let result = try lab.download(["add", url, "--output", lab.out + "/" + name], environment: environment)
            guard result.status == 0 else { throw LabError("add failed: \(result.err)") }
            return result.out.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let plain = try add("http://mirror.test:8080/f.bin", "f.bin")
        let overTLS = try add("https://mirror.test:8443/t.bin", "t.bin")
        let redirected = try add("http://mirror.test:8080/moved", "moved.bin")
        let direct = try add("http://direct.test:8080/f.bin", "direct.bin")
        for (id, what) in [(plain, "http forwarded"), (overTLS, "https through CONNECT"), (redirected, "a redirect, followed through the proxy"),
                           (direct, "no_proxy, straight")] { try completes(id, what) }
        XCTAssertEqual(try lab.sha256(lab.out + "/f.bin"), plainSum)
        XCTAssertEqual(try lab.sha256(lab.out + "/t.bin"), tlsSum)
        XCTAssertEqual(try lab.sha256(lab.out + "/moved.bin"), plainSum)
        XCTAssertEqual(try lab.sha256(lab.out + "/direct.bin"), plainSum)
        XCTAssertTrue(try lab.download(["show", plain]).out.contains("via proxy http://proxy.test:3128"))
        XCTAssertFalse(try lab.download(["show", direct]).out.contains("via proxy"))
        // The forwarded requests reached the origin from the proxy; the no_proxy one from reachd-transfers' own address.
        XCTAssertFalse(asked("/f.bin").isEmpty)
        XCTAssertTrue(asked("/f.bin").contains { !$0.hasPrefix("192.0.2.") }, originRequests.joined(separator: "\n"))
        XCTAssertTrue(asked("/f.bin").contains { $0.hasPrefix("192.0.2.") }, originRequests.joined(separator: "\n"))

        // A redirect to a URL no job could have (credentials in it) is not followed, through the proxy or around it.
        _ = try lab.serve("escaped.bin", bytes: 1000)
        let escape = try add("http://mirror.test:8080/escape", "escape.bin")
        try lab.waitFor(escape, "the redirect's answer as the job's") { ($0.reason ?? "").contains("302") }
        XCTAssertTrue(asked("/escaped.bin").isEmpty, originRequests.joined(separator: "\n"))

        let source = lab.lab.directory + "/source.bin"
        let sourceSum = try lab.serve("../source.bin", bytes: 250_000, seed: 5)
        chmod(source, 0o644)
        let upload = try lab.reachctl(["upload", "add", source, "--to", "http://mirror.test:8080/up/u.bin"], user: nil, environment: environment)
        XCTAssertEqual(upload.status, 0, upload.err)
        try completes(upload.out.trimmingCharacters(in: .whitespacesAndNewlines), "an upload forwarded")
        XCTAssertEqual(try lab.sha256(lab.www + "/up/u.bin"), sourceSum)

        let fetched = lab.out + "/fetched.bin"
        let fetch = try lab.reachctl(["fetch", "http://mirror.test:8080/f.bin", "--output", fetched], user: nil, environment: environment)
        XCTAssertEqual(fetch.status, 0, fetch.err)
        XCTAssertEqual(try lab.sha256(fetched), plainSum)
    }

    func testTheConfiguredProxyAndAJobsOwnSOCKS5ProxyAndNone() throws {
        try lab.startPeerServer(["/usr/bin/microsocks", "-i", Self.proxyAddress, "-p", "1080"], address: Self.proxyAddress, port: 1080)
        try lab.startDaemon(config: """
            [downloads]
            ca_file = "\(tls)/ca.pem"
            proxy = "\(plainProxy)"
            no_proxy = "direct.test"
            """)
        let sum = try lab.serve("f.bin", bytes: 300_000)
        let configured = try lab.add("https://mirror.test:8443/f.bin", output: lab.out + "/configured.bin")
        let socks = try lab.add("http://mirror.test:8080/f.bin", output: lab.out + "/socks.bin", ["--proxy", "socks5h://proxy.test:1080"])
        let skipped = try lab.add("http://direct.test:8080/f.bin", output: lab.out + "/skipped.bin")
        try completes(configured, "through [downloads] proxy")
        try completes(socks, "through SOCKS5")
        try completes(skipped, "no_proxy")
        for name in ["configured", "socks", "skipped"] { XCTAssertEqual(try lab.sha256(lab.out + "/\(name).bin"), sum, name) }
        XCTAssertTrue(try lab.download(["show", socks]).out.contains("via proxy socks5h://proxy.test:1080"))
        XCTAssertTrue(try lab.download(["show", configured]).out.contains("via proxy http://proxy.test:3128"))

        // `none` goes straight to the origin, which only a proxy reaches: the job waits, its route unreachable.
        let none = try lab.add("http://mirror.test:8080/f.bin", output: lab.out + "/none.bin", ["--proxy", "none"])
        try lab.waitFor(none, "waiting for a route to the origin itself") { $0.state == .deferred && ($0.reason ?? "").contains("mirror.test") }
        // A proxy URL that cannot be used is refused at once, without quoting it.
        let refused = try lab.download(["add", "http://mirror.test:8080/f.bin", "--output", lab.out + "/x", "--proxy", "https://u:secret@proxy.test"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.err.contains("not supported"), refused.err)
        XCTAssertFalse(refused.err.contains("secret"), refused.err)
    }

    func testTheServicesOwnEnvironmentWhenNeitherTheJobNorTheConfigurationNamesAProxy() throws {
        try lab.startDaemon(config: "[downloads]\nca_file = \"\(tls)/ca.pem\"\n", environment: ["https_proxy": plainProxy, "no_proxy": "direct.test"])
        let sum = try lab.serve("f.bin", bytes: 200_000)
        let tunnelled = try lab.add("https://mirror.test:8443/f.bin", output: lab.out + "/env.bin")
        try completes(tunnelled, "through the service's https_proxy")
        XCTAssertEqual(try lab.sha256(lab.out + "/env.bin"), sum)
        XCTAssertTrue(lab.log.contains("transfers go through the proxy http://proxy.test:3128 (environment)"), lab.log)
        // Its http_proxy is unset: plain http goes straight, and only a proxy reaches the origin.
        let plain = try lab.add("http://mirror.test:8080/f.bin", output: lab.out + "/plain.bin")
        try lab.waitFor(plain, "waiting for a route to the origin itself") { $0.state == .deferred && $0.viaProxy == nil }
    }

    func testProxyCredentialsGoToTheProxyOnlyAndA407NamesIt() throws {
        let netrc = lab.lab.directory + "/netrc"
        try "machine proxy.test login alice password \"\(Self.password)\"\n".write(toFile: netrc, atomically: true, encoding: .utf8)
        chmod(netrc, 0o644)
        try startSquid()
        // The system instance lends its netrc to its own proxy, never to one a job names.
        try lab.startDaemon(config: "[downloads]\nca_file = \"\(tls)/ca.pem\"\nnetrc = \"\(netrc)\"\nproxy = \"\(guardedProxy)\"\n")
        let sum = try lab.serve("f.bin", bytes: 200_000)
        // Percent-encoded in the URL, as a proxy URL's userinfo may be.
        let encoded = Self.password.replacingOccurrences(of: "-", with: "%2D")
        let inURL = try lab.add("http://mirror.test:8080/f.bin", output: lab.out + "/url.bin", ["--proxy", "http://alice:\(encoded)@proxy.test:3129"])
        let fromNetrc = try lab.add("https://mirror.test:8443/f.bin", output: lab.out + "/netrc.bin")
        let wrong = try lab.add("http://mirror.test:8080/f.bin", output: lab.out + "/wrong.bin", ["--proxy", "http://alice:nope@proxy.test:3129"])
        let wrongTunnel = try lab.add("https://mirror.test:8443/f.bin", output: lab.out + "/wrongtls.bin", ["--proxy", "http://alice:nope@proxy.test:3129"])
        try completes(inURL, "credentials from the proxy URL, forwarded")
        try completes(fromNetrc, "credentials from the netrc's entry for the proxy, on the CONNECT")
        XCTAssertEqual(try lab.sha256(lab.out + "/url.bin"), sum)
        XCTAssertEqual(try lab.sha256(lab.out + "/netrc.bin"), sum)
        // The same proxy named by the job: the netrc is not lent to it.
        let without = try lab.add("https://mirror.test:8443/f.bin", output: lab.out + "/without.bin", ["--proxy", guardedProxy])
        for id in [wrong, wrongTunnel] {
            try lab.waitFor(id, "a 407 that names the proxy") {
                ($0.reason ?? "").contains("the proxy http://proxy.test:3129 refused the credentials (407")
            }
        }
        try lab.waitFor(without, "a 407 that asks for credentials") {
            ($0.reason ?? "").contains("the proxy http://proxy.test:3129 asks for credentials (407")
        }
        // The origin never saw a credential, and no output shows the password.
        XCTAssertFalse(originRequests.isEmpty)
        for line in originRequests { XCTAssertTrue(line.hasSuffix("\"-\" \"-\""), line) }
        let outputs = [try lab.download(["list", "--json"]).out, try lab.download(["show", inURL]).out, lab.log]
        XCTAssertFalse(outputs.contains { $0.contains(Self.password) || $0.contains(encoded) || $0.contains("nope") })
    }

    func testAUsersInstanceAsksTheDesktopsSettingsThroughThePortalWhenNothingElseNamesAProxy() throws {
        let portal = try DesktopPortal(directory: lab.lab.directory)
        defer { portal.stop() }
        try portal.start(proxySettings: """
            [system/proxy]
            mode='manual'
            ignore-hosts=['direct.test']

            [system/proxy/http]
            host='proxy.test'
            port=3128

            [system/proxy/https]
            host='proxy.test'
            port=3128
            """)
        let user = try lab.makeUser("p")
        try lab.startDaemon(config: "[downloads]\nca_file = \"\(tls)/ca.pem\"\n", arguments: ["--proxy-resolver", "session"],
                            environment: ["DBUS_SESSION_BUS_ADDRESS": portal.bus.address], user: user)
        let sum = try lab.serve("f.bin", bytes: 300_000)
        func add(_ url: String, _ name: String) throws -> String {
            let result = try lab.download(["add", url, "--output", user.home + "/" + name], user: user.name)
            guard result.status == 0 else { throw LabError("add failed: \(result.err)") }
            return result.out.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        // Only the proxy reaches mirror.test: these complete only through the proxy the portal names.
        let forwarded = try add("http://mirror.test:8080/f.bin", "forwarded.bin")
        let tunnelled = try add("https://mirror.test:8443/f.bin", "tunnelled.bin")
        let ignored = try add("http://direct.test:8080/f.bin", "ignored.bin")
        for id in [forwarded, tunnelled, ignored] {
            let waited = try lab.download(["wait", id, "--timeout", "30"], user: user.name)
            XCTAssertEqual(waited.status, 0, waited.out + waited.err)
        }
        for name in ["forwarded", "tunnelled", "ignored"] { XCTAssertEqual(try lab.sha256(user.home + "/\(name).bin"), sum, name) }
        XCTAssertTrue(try lab.download(["show", forwarded], user: user.name).out.contains("via proxy http://proxy.test:3128"))
        XCTAssertFalse(try lab.download(["show", ignored], user: user.name).out.contains("via proxy"))
        XCTAssertTrue(asked("/f.bin").contains { $0.hasPrefix("192.0.2.") }, "ignore-hosts went straight: \(originRequests)")
        // The offline cache asks the portal too.
        let fetch = try lab.reachctl(["fetch", "http://mirror.test:8080/f.bin", "--output", user.home + "/fetched.bin"], user: user.name)
        XCTAssertEqual(fetch.status, 0, fetch.err)
        XCTAssertEqual(try lab.sha256(user.home + "/fetched.bin"), sum)
        XCTAssertTrue(lab.log.contains("transfers ask the desktop's proxy settings"), lab.log)
    }

    func testBackgroundDownloadsThroughAProxyYieldToTheUsersOwn() throws {
        // The bottleneck: a tbf queue on the way from the proxy (and the origin) to reachd-transfers' namespace.
        try lab.lab.run("ip netns exec \(lab.lab.peer) tc qdisc add dev eth0 root tbf rate 16mbit burst 32kb limit 400000")
        try lab.startDaemon(config: "[downloads]\nca_file = \"\(tls)/ca.pem\"\n")
        _ = try lab.serve("background.bin", bytes: 64 << 20)
        _ = try lab.serve("own.bin", bytes: 64 << 20, seed: 2)
        // One way at a time, each job alone on the path before the user's own download starts: a job started into a
        // full queue takes it for the path's base (docs/transfers.md).
        for (url, way) in [("http://mirror.test:8080/background.bin", "forwarded"), ("https://mirror.test:8443/background.bin", "through CONNECT")] {
            let job = try lab.add(url, output: lab.out + "/\(way.hasPrefix("f") ? "forwarded" : "tunnelled").bin", ["--proxy", plainProxy])
            try lab.waitFor(job, "running, with a rate, \(way)") { $0.state == .running && $0.pace != nil }
            // The user's own download, through the same proxy (`ip netns exec` runs curl itself: terminating it ends the
            // download at once).
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            curl.arguments = ["netns", "exec", lab.lab.host, "curl", "-s", "-x", plainProxy, "-o", "/dev/null", "http://mirror.test:8080/own.bin"]
            try curl.run()
            defer {
                curl.terminate()
                curl.waitUntilExit()
            }
            let yielding = try lab.waitFor(job, "yielding to the user's download, \(way)", timeout: 60) { $0.pace?.yielding == true }
            XCTAssertEqual(yielding.viaProxy, plainProxy)
            XCTAssertEqual(try lab.download(["cancel", job]).status, 0)
        }
    }

    func testTheRouteToTheProxyDecidesTheCost() throws {
        // The origin is reachable straight over eth0 (unmetered); the proxy only over wwan0 (metered).
        try lab.lab.ip("route del unreachable \(TransferLab.serverAddress)/32")
        try lab.lab.ip("route add \(Self.proxyAddress)/32 via 198.51.100.1 dev wwan0")
        try lab.startDaemon(config: "[downloads]\nmetered_threshold = 100000\n")
        let sum = try lab.serve("f.bin", bytes: 300_000)
        let proxied = try lab.add("http://mirror.test:8080/f.bin", output: lab.out + "/proxied.bin", ["--proxy", plainProxy])
        let straight = try lab.add("http://mirror.test:8080/f.bin", output: lab.out + "/straight.bin")
        try completes(straight, "straight, over the unmetered route")
        XCTAssertEqual(try lab.sha256(lab.out + "/straight.bin"), sum)
        let waiting = try lab.waitFor(proxied, "waiting: the route to the proxy is metered") {
            $0.state == .deferred && ($0.reason ?? "").contains("route to proxy.test is metered")
        }
        XCTAssertEqual(waiting.viaProxy, "http://proxy.test:3128")
        // Only the size probe (HEAD) went through the proxy, no body.
        XCTAssertTrue(asked("/f.bin").filter { $0.contains(" GET ") }.allSatisfy { $0.hasPrefix("192.0.2.") }, "\(originRequests)")
    }
}
