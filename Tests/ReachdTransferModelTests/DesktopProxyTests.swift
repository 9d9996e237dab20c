import ReachdTransferModel
import XCTest

/// The portal's answer (GLib's list of proxy URIs) read as the first entry that can be used.
final class DesktopProxyTests: XCTestCase {
    func testTheFirstUsableEntryDecides() throws {
        XCTAssertEqual(DesktopProxy(answer: ["direct://"]), .direct)
        XCTAssertEqual(DesktopProxy(answer: ["DIRECT://", "http://later:1"]), .direct)
        let http = try XCTUnwrap(DesktopProxy(answer: ["http://proxy.example:3128"]).server)
        XCTAssertEqual(http.kind, .http)
        XCTAssertEqual(http.host, "proxy.example")
        XCTAssertEqual(http.port, 3128)
        // TLS to the proxy and SOCKS4 cannot be used: the next entry is taken.
        let next = DesktopProxy(answer: ["https://tls.example:443", "socks4://old.example:1080", "http://next.example:8080", "direct://"])
        XCTAssertEqual(next.server?.host, "next.example")
        XCTAssertEqual(DesktopProxy(answer: ["https://tls.example", "direct://"]), .direct)
    }

    func testGLibsSOCKSEntriesSendNamesToTheProxy() {
        XCTAssertEqual(DesktopProxy(answer: ["socks://s.example:1080"]).server?.kind, .socks5h)
        XCTAssertEqual(DesktopProxy(answer: ["SOCKS5://s.example:1080"]).server?.kind, .socks5h)
        XCTAssertEqual(DesktopProxy(answer: ["socks5h://s.example:1080"]).server?.kind, .socks5h)
    }

    func testAnAnswerWithNothingUsableSaysWhyWithoutQuotingIt() {
        guard case .unusable(let why) = DesktopProxy(answer: ["https://user:s3cret@tls.example", "socks4a://a.example", "not a uri",
                                                              String(repeating: "h", count: 3000)]) else {
            return XCTFail("an answer of unusable entries was used")
        }
        XCTAssertEqual(why, "it named only https://, socks4a://, an entry that is not a URI, an entry longer than 2048 bytes")
        XCTAssertFalse(why.contains("s3cret"))
        XCTAssertEqual(DesktopProxy(answer: []), .unusable("it named none"))
        // A SOCKS entry with credentials cannot be used either (no SOCKS5 authentication).
        XCTAssertEqual(DesktopProxy(answer: ["socks://u:p@s.example"]), .unusable("it named only socks://"))
    }

    func testOnlyTheFirstEntriesAreRead() {
        let answer = Array(repeating: "ftp://x.example", count: DesktopProxy.maximumEntries) + ["direct://"]
        XCTAssertNotEqual(DesktopProxy(answer: answer), .direct)
    }

    func testTheJobsOwnAndTheInstancesProxyComeBeforeTheDesktops() throws {
        let desktop = DesktopProxy(answer: ["http://desktop.example:3128"])
        let alone = JobProxy(asked: nil, instance: nil, desktop: desktop)
        XCTAssertEqual(alone.proxy(for: "https://mirror.example/f")?.host, "desktop.example")
        XCTAssertEqual(alone.gatingHost(for: "https://mirror.example/f"), "desktop.example")
        XCTAssertNil(JobProxy(asked: nil, instance: nil, desktop: .direct).proxy(for: "http://mirror.example/f"))
        let instance = ProxySettings(http: try ProxyServer("http://instance:1"), https: nil)
        XCTAssertNil(JobProxy(asked: nil, instance: instance, desktop: desktop).proxy(for: "https://mirror.example/f"))
        XCTAssertEqual(JobProxy(asked: "socks5h://own:1080", instance: nil, desktop: desktop).proxy(for: "http://m.example/")?.host, "own")
        XCTAssertNil(JobProxy(asked: JobProxy.none, instance: nil, desktop: desktop).proxy(for: "http://m.example/"))
    }
}
