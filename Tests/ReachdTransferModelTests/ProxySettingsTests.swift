import ReachdTransferModel
import XCTest

/// Proxy URLs as curl writes them, the environment as curl reads it, `no_proxy`, and which proxy a job's request takes.
final class ProxySettingsTests: XCTestCase {
    func testProxyURLsInCurlsSyntax() throws {
        let plain = try ProxyServer("http://proxy.example:3128/")
        XCTAssertEqual([plain.kind.rawValue, plain.host, "\(plain.port)"], ["http", "proxy.example", "3128"])
        XCTAssertNil(plain.login)
        let bare = try ProxyServer("Proxy.Example")
        XCTAssertEqual(bare.description, "http://proxy.example:1080")
        let withCredentials = try ProxyServer("http://al%40ice:p%3Ass%20w@[2001:db8::1]:8080")
        XCTAssertEqual(withCredentials.login, "al@ice")
        XCTAssertEqual(withCredentials.password, "p:ss w")
        XCTAssertEqual(withCredentials.description, "http://[2001:db8::1]:8080")
        XCTAssertEqual(withCredentials.url, "http://al%40ice:p%3Ass%20w@[2001:db8::1]:8080")
        XCTAssertEqual(try ProxyServer(withCredentials.url), withCredentials)
        XCTAssertEqual(try ProxyServer("socks5h://gate:1081").kind, .socks5h)
        XCTAssertEqual(withCredentials.credentials(or: .bearer(token: "netrc")), .basic(login: "al@ice", password: "p:ss w"))
        XCTAssertEqual(plain.credentials(or: .bearer(token: "netrc")), .bearer(token: "netrc"))
    }

    func testProxyURLsThatCannotBeUsedAreRefusedWithoutQuotingThem() {
        for (text, why) in [
            ("https://u:secret@proxy", "not supported"), ("socks4://proxy", "SOCKS4"), ("ftp://proxy", "scheme"),
            ("http://proxy:0", "HOST:PORT"), ("http://proxy:99999", "HOST:PORT"), ("http://pro xy", "spaces"),
            ("http://proxy/path", "no path"), ("socks5://u:secret@proxy", "SOCKS5"), ("http://:secret@proxy", "user name"),
            ("http://u:%zz@proxy", "percent"), ("", "empty"), ("http://[::1", "HOST:PORT"), ("http://[proxy]:80", "HOST:PORT"),
        ] {
            XCTAssertThrowsError(try ProxyServer(text), text) { error in
                let message = "\(error)"
                XCTAssertTrue(message.contains(why), "\(text): \(message)")
                XCTAssertFalse(message.contains("secret"), message)
            }
        }
    }

    func testTheEnvironmentAsCurlReadsIt() throws {
        XCTAssertNil(ProxySettings.environment(["no_proxy": "*"]).settings)
        // Upper-case HTTP_PROXY is ignored (a CGI program's environment could set it from a request's `Proxy:` header).
        XCTAssertNil(ProxySettings.environment(["HTTP_PROXY": "http://evil:1"]).settings)
        let settings = try XCTUnwrap(ProxySettings.environment(["http_proxy": "http://a:1", "HTTPS_PROXY": "http://b:2",
                                                                "ALL_PROXY": "socks5h://c:3", "NO_PROXY": "internal.example"]).settings)
        XCTAssertEqual(settings.http?.host, "a")
        XCTAssertEqual(settings.https?.host, "b")
        let fallback = try XCTUnwrap(ProxySettings.environment(["all_proxy": "socks5h://c:3"]).settings)
        XCTAssertEqual(fallback.http?.host, "c")
        XCTAssertEqual(fallback.https?.host, "c")
        XCTAssertEqual(settings.proxy(for: try TransferURL("http://x.example/"))?.host, "a")
        XCTAssertEqual(settings.proxy(for: try TransferURL("https://x.example/"))?.host, "b")
        XCTAssertNil(settings.proxy(for: try TransferURL("https://files.internal.example/")))
        // A variable that cannot be used leaves its scheme without a proxy, and says why; the other scheme keeps its own.
        let (partial, unusable) = ProxySettings.environment(["https_proxy": "https://u:secret@p", "all_proxy": "http://c:3"])
        XCTAssertEqual(partial?.http?.host, "c")
        XCTAssertNil(partial?.https)
        XCTAssertEqual(Array(unusable.keys), ["https"])
        XCTAssertTrue("\(unusable["https"]!)".hasPrefix("https_proxy: "), "\(unusable)")
        XCTAssertFalse("\(unusable)".contains("secret"))
    }

    func testNoProxyNamesSuffixesAddressesAndNetworks() {
        let list = NoProxyList(".example.com, localhost 10.0.0.0/8,[fd00::]/8, 192.0.2.7, bad/x")
        for host in ["example.com", "www.example.com", "LOCALHOST", "10.1.2.3", "fd12::1", "192.0.2.7"] {
            XCTAssertTrue(list.excludes(host: host), host)
        }
        for host in ["notexample.com", "example.com.evil", "11.0.0.1", "192.0.2.8", "fe80::1", "bad"] {
            XCTAssertFalse(list.excludes(host: host), host)
        }
        XCTAssertTrue(NoProxyList("*").excludes(host: "anything"))
        // As curl: `*` counts alone only, and trailing dots do not matter.
        XCTAssertFalse(NoProxyList("localhost,*").excludes(host: "anything"))
        XCTAssertTrue(NoProxyList("localhost,*").excludes(host: "localhost"))
        XCTAssertTrue(NoProxyList("example.com.").excludes(host: "www.example.com."))
        XCTAssertFalse(NoProxyList("").excludes(host: "anything"))
        XCTAssertTrue(NoProxyList("10.0.0.0/0").excludes(host: "203.0.113.9"))
        XCTAssertFalse(NoProxyList("10.0.0.0/33").excludes(host: "10.0.0.1"))
    }

    func testAJobsOwnProxyBeatsTheInstancesAndTheRouteJudgedIsTheProxys() throws {
        let instance = ProxySettings(http: try ProxyServer("http://instance:3128"), https: nil, noProxy: NoProxyList("skip.example"))
        let byInstance = JobProxy(asked: nil, instance: instance)
        XCTAssertEqual(byInstance.proxy(for: "http://mirror.example/f")?.host, "instance")
        XCTAssertNil(byInstance.proxy(for: "https://mirror.example/f"))
        XCTAssertNil(byInstance.proxy(for: "http://a.skip.example/f"))
        XCTAssertEqual(byInstance.gatingHost(for: "http://mirror.example/f"), "instance")
        XCTAssertEqual(byInstance.gatingHost(for: "https://mirror.example/f"), "mirror.example")
        let own = JobProxy(asked: "socks5h://own:1080", instance: instance)
        XCTAssertEqual(own.proxy(for: "https://a.skip.example/f")?.host, "own")
        let none = JobProxy(asked: JobProxy.none, instance: instance)
        XCTAssertNil(none.proxy(for: "http://mirror.example/f"))
        XCTAssertEqual(none.gatingHost(for: "http://mirror.example/f"), "mirror.example")
        XCTAssertNoThrow(try JobProxy.validate("none"))
        XCTAssertThrowsError(try JobProxy.validate("nowhere:0"))
    }

    func testAForwardingProxyRefusesCredentialsWith407Only() {
        XCTAssertTrue(ProxyAnswer.refusesCredentials(status: 407))
        XCTAssertFalse(ProxyAnswer.refusesCredentials(status: 401))
        XCTAssertFalse(ProxyAnswer.refusesCredentials(status: 200))
    }

    func testARedirectGoesOnlyToAURLAJobCouldHave() {
        XCTAssertEqual(Redirect.target(status: 302, location: "/b?c", from: "http://a.example/x"), "http://a.example/b?c")
        XCTAssertEqual(Redirect.target(status: 308, location: "https://b.example:8443/", from: "http://a.example/"), "https://b.example:8443/")
        // Credentials in the target (a way around a proxy's host checks), other schemes, and other answers: none.
        XCTAssertNil(Redirect.target(status: 302, location: "http://u@10.0.0.5:8080/admin", from: "http://a.example/"))
        XCTAssertNil(Redirect.target(status: 302, location: "ftp://a.example/", from: "http://a.example/"))
        XCTAssertNil(Redirect.target(status: 200, location: "/b", from: "http://a.example/"))
    }
}
