import Foundation
import ReachdClient
import ReachdProtocol
import ReachdTransferModel
import XCTest

/// HTTPS with a test CA (trusted through `[downloads] ca_file`, refused without it) and netrc credentials
/// (Basic and Bearer) against nginx in the peer namespace; credentials never over plain http unless
/// allowed, and never in any output.
final class AuthIntegrationTests: XCTestCase {
    private var lab: TransferLab!
    private static let password = "pa55 w0rd-\(getpid())"
    private static let token = "t0ken-\(getpid())-secret"
    private var tls: String { lab.lab.directory + "/tls" }
    private var credentialLog: String { lab.lab.directory + "/credentials.log" }

    override func setUpWithError() throws {
        lab = try TransferLab()
        try lab.lab.hostsFile(["mirror.test": TransferLab.serverAddress, "tokens.test": TransferLab.serverAddress,
                               "other.test": TransferLab.serverAddress])
        _ = try lab.makeCertificates(for: ["mirror.test", "tokens.test"])
        let htpasswd = lab.lab.directory + "/htpasswd"
        try lab.lab.run("printf 'alice:%s\\n' \"$(openssl passwd -apr1 '\(Self.password)')\" > \(htpasswd)")
        // Every request with the Authorization it carried, for the capture test.
        try lab.startNginx(servers: """
            log_format credentials '$host:$server_port $request_method $uri $status "$http_authorization"';
            access_log \(credentialLog) credentials;
            server {
              listen \(TransferLab.serverAddress):8443 ssl;
              ssl_certificate \(tls)/server.pem; ssl_certificate_key \(tls)/server.key;
              root \(lab.www);
              location /basic/ { auth_basic "reachd"; auth_basic_user_file \(htpasswd); dav_methods PUT; }
              location = /basic/moved { return 302 http://other.test:8080/basic/landing.bin; }
              location /bearer/ { if ($http_authorization != "Bearer \(Self.token)") { return 401; } }
            }
            server {
              listen \(TransferLab.serverAddress):8080;
              root \(lab.www);
              location /basic/ { auth_basic "reachd"; auth_basic_user_file \(htpasswd); dav_methods PUT; }
              location = /open/moved { return 302 https://mirror.test:8443/basic/redirected.bin; }
            }
            """, probePort: 8443)
        for dir in ["basic", "bearer"] { try FileManager.default.createDirectory(atPath: lab.www + "/" + dir, withIntermediateDirectories: true) }
        try """
            machine mirror.test login alice password "\(Self.password)"
            machine tokens.test login bearer password \(Self.token)
            """.write(toFile: lab.lab.directory + "/netrc", atomically: true, encoding: .utf8)
    }

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    private func startDaemon(trustingTheCA: Bool = true) throws {
        var config = "[downloads]\nnetrc = \"\(lab.lab.directory)/netrc\"\n"
        if trustingTheCA { config += "ca_file = \"\(tls)/ca.pem\"\n" }
        try lab.startDaemon(config: config)
    }

    func testHTTPSWithBasicAndBearerCredentialsThatAppearNowhere() throws {
        try startDaemon()
        let basicSum = try lab.serve("basic/f.bin", bytes: 300_000)
        let bearerSum = try lab.serve("bearer/g.bin", bytes: 200_000, seed: 3)
        let basic = try lab.add("https://mirror.test:8443/basic/f.bin", output: lab.out + "/f.bin")
        let bearer = try lab.add("https://tokens.test:8443/bearer/g.bin", output: lab.out + "/g.bin")
        try lab.waitFor(basic, "completed with Basic credentials") { $0.state == .completed }
        try lab.waitFor(bearer, "completed with a Bearer token") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/f.bin"), basicSum)
        XCTAssertEqual(try lab.sha256(lab.out + "/g.bin"), bearerSum)

        let outputs = [
            try lab.download(["list", "--json"]).out, try lab.download(["show", basic, "--json"]).out,
            try lab.download(["show", bearer]).out, lab.log,
            String(decoding: try Data(contentsOf: URL(fileURLWithPath: lab.stateDirectory + "/jobs.sqlite")), as: UTF8.self),
        ]
        for secret in [Self.password, Self.token, "alice:"] {
            XCTAssertFalse(outputs.contains { $0.contains(secret) }, "\(secret) leaked")
        }
    }

    /// Every kind of request (GET, conditional GET, HEAD, PUT, cache fill, redirects), captured by the server
    /// with the Authorization it carried: credentials reach mirror.test over https and nothing else, and a
    /// redirect never carries them on.
    func testEveryKindOfRequestCarriesCredentialsOnlyWhereTheyBelong() throws {
        try startDaemon()
        try lab.serve("basic/a.bin", bytes: 20_000)
        try lab.serve("basic/c.bin", bytes: 20_000, seed: 2)
        try lab.serve("basic/h.bin", bytes: 20_000, seed: 3)
        try lab.serve("basic/redirected.bin", bytes: 1000)
        try lab.serve("basic/landing.bin", bytes: 1000)
        let https = "https://mirror.test:8443/basic/", http = "http://mirror.test:8080/basic/"

        let get = try lab.add(https + "a.bin", output: lab.out + "/a.bin")
        let got = try lab.waitFor(get, "completed") { $0.state.isTerminal }
        XCTAssertEqual(got.state, .completed, got.reason ?? "")
        XCTAssertEqual(try lab.download(["refresh", get]).status, 0)
        try lab.waitFor(get, "checked (conditional GET)") { $0.state == .completed && $0.download?.lastChecked != got.download?.lastChecked }
        XCTAssertEqual(try lab.fetch(https + "c.bin").status, 0, "cache fill")
        try "payload".write(toFile: lab.lab.directory + "/up.txt", atomically: true, encoding: .utf8)
        for url in [https + "up.bin", http + "up-plain.bin"] {
            let added = try lab.upload(lab.lab.directory + "/up.txt", to: url)
            try lab.waitFor(added, "uploaded or failed") { $0.state.isTerminal }
        }
        let moved = try lab.add(https + "moved", output: lab.out + "/moved")
        try lab.waitFor(moved, "ended") { $0.state.isTerminal }
        let redirected = try lab.add("http://other.test:8080/open/moved", output: lab.out + "/redirected")
        try lab.waitFor(redirected, "ended") { $0.state.isTerminal }
        let plain = try lab.add(http + "a.bin", output: lab.out + "/plain.bin")
        try lab.waitFor(plain, "refused") { $0.state.isTerminal }
        XCTAssertEqual(try lab.fetch(http + "c.bin").status, 1, "no cache fill over plain http with credentials")
        // HEAD: the size probe of a new job on a metered route.
        try lab.eth0Down()
        try lab.waitForLoggedVerdict("wwan")
        let probed = try lab.add(https + "h.bin", output: lab.out + "/h.bin")
        let done = try lab.waitFor(probed, "completed over wwan0") { $0.state.isTerminal }
        XCTAssertEqual(done.state, .completed, done.reason ?? "")

        let lines = try String(contentsOfFile: credentialLog, encoding: .utf8).split(separator: "\n").map(String.init)
        let seen = Set(lines.map { $0.split(separator: " ").prefix(4).joined(separator: " ") })
        for kind in ["mirror.test:8443 GET /basic/a.bin 200", "mirror.test:8443 GET /basic/a.bin 304",
                     "mirror.test:8443 GET /basic/c.bin 200", "mirror.test:8443 HEAD /basic/h.bin 200",
                     "mirror.test:8443 GET /basic/h.bin 200", "mirror.test:8443 PUT /basic/up.bin 201",
                     "mirror.test:8443 GET /basic/moved 302", "other.test:8080 GET /open/moved 302",
                     "mirror.test:8443 GET /basic/redirected.bin 401"] {
            XCTAssertTrue(seen.contains(kind), "\(kind) not among \(lines)")
        }
        for line in lines {
            let belongs = line.hasPrefix("mirror.test:8443 ") && !line.contains("/basic/redirected.bin")
            XCTAssertEqual(line.hasSuffix("\"Basic \(Data("alice:\(Self.password)".utf8).base64EncodedString())\""), belongs, line)
            if !belongs { XCTAssertTrue(line.hasSuffix("\"-\""), line) }
        }
        XCTAssertFalse(lines.contains { $0.contains("landing.bin") }, "a request with credentials follows no redirect")
    }

    func testMissingCredentialsFailWithTheStatus() throws {
        try startDaemon()
        try lab.serve("bearer/h.bin", bytes: 1000)
        let id = try lab.add("https://mirror.test:8443/bearer/h.bin", output: lab.out + "/h.bin")
        let failed = try lab.waitFor(id, "failed") { $0.state.isTerminal }
        XCTAssertEqual(failed.reason, "failed: server answered 401", "Basic credentials for mirror.test are not the token")
    }

    func testUntrustedCertificateFailsWithAReason() throws {
        try startDaemon(trustingTheCA: false)
        try lab.serve("basic/f.bin", bytes: 1000)
        let id = try lab.add("https://mirror.test:8443/basic/f.bin", output: lab.out + "/f.bin")
        let failed = try lab.waitFor(id, "failed") { $0.state.isTerminal }
        XCTAssertEqual(failed.state, .failed)
        XCTAssertTrue((failed.reason ?? "").hasPrefix("failed: TLS:"), failed.reason ?? "")
        XCTAssertEqual(failed.attempts, 0, "a certificate error is not retried")
    }

    func testCredentialsAreNotSentOverPlainHTTPUnlessAllowed() throws {
        try startDaemon()
        let sum = try lab.serve("basic/p.bin", bytes: 5000)
        let refused = try lab.add("http://mirror.test:8080/basic/p.bin", output: lab.out + "/p.bin")
        let failed = try lab.waitFor(refused, "failed") { $0.state.isTerminal }
        XCTAssertEqual(failed.reason, "failed: the netrc has credentials for this server but the URL is plain http; "
            + "use https, or --allow-insecure-auth to send them readable")
        XCTAssertFalse(lab.nginxAccessLog.contains("/basic/p.bin"), "no request was made")
        let allowed = try lab.add("http://mirror.test:8080/basic/p.bin", output: lab.out + "/p2.bin", ["--allow-insecure-auth"])
        try lab.waitFor(allowed, "completed") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/p2.bin"), sum)
    }

    func testAUsersOwnInstanceReadsTheirNetrcAndServesThemAlone() throws {
        // No netrc in the configuration: a user's own instance reads that user's ~/.netrc, as that user.
        let user = try lab.makeUser("n")
        try "machine mirror.test login alice password \"\(Self.password)\"\n".write(toFile: user.home + "/.netrc", atomically: true, encoding: .utf8)
        try lab.lab.run("chown \(user.name) \(user.home)/.netrc && chmod 600 \(user.home)/.netrc && chmod 700 \(user.home)")
        try lab.startDaemon(config: "[downloads]\nca_file = \"\(tls)/ca.pem\"\n", user: user)
        let sum = try lab.serve("basic/own.bin", bytes: 30_000)

        let added = try lab.download(["add", "https://mirror.test:8443/basic/own.bin", "--output", user.home + "/own.bin"], user: user.name)
        XCTAssertEqual(added.status, 0, added.err)
        let id = added.out.trimmingCharacters(in: .whitespacesAndNewlines)
        let waited = try lab.download(["wait", id, "--timeout", "30"], user: user.name)
        XCTAssertEqual(waited.status, 0, waited.out + waited.err)
        XCTAssertEqual(try lab.sha256(user.home + "/own.bin"), sum)
        var info = stat()
        XCTAssertEqual(stat(user.home + "/own.bin", &info), 0)
        XCTAssertEqual(info.st_uid, user.uid, "written by the user's own process")
        XCTAssertEqual(try lab.lab.run("ps -o user= -p \(try XCTUnwrap(lab.daemonPID))").trimmingCharacters(in: .whitespacesAndNewlines), user.name)

        // Nobody else is served by it, root included.
        for other in [nil, "nobody"] as [String?] {
            let refused = try lab.download(["list"], user: other)
            XCTAssertNotEqual(refused.status, 0)
            XCTAssertTrue(refused.err.contains("is not allowed to use this reachd-transfers: it is uid \(user.uid)'s own instance"), refused.err)
        }
    }
}
