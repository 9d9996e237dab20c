import ReachdConfig
import ReachdModel
import XCTest

final class ConfigurationTests: XCTestCase {
    func testParsesInterfaceRules() throws {
        let config = try Configuration(toml: """
            # phone tethering over USB is mobile data
            [[interface]]
            match = "usb*"
            kind = "wwan"

            [[interface]]
            match = "wwan1"
            metered = false

            [[interface]]
            match = "docker*"
            ignore = true

            [[interface]]
            match = "wlan1"
            constrained = true

            [[unmetered]]
            host = "mirror.lan"

            [[unmetered]]
            prefix = "198.18.0.0/15"
            """)
        XCTAssertEqual(config.unmeteredDestinations, [
            UnmeteredDestination(host: "mirror.lan"),
            UnmeteredDestination(prefix: IPAddress("198.18.0.0"), prefixLength: 15),
        ])
        XCTAssertEqual(config.interfaceRules, [
            InterfaceRule(match: "usb*", kind: .wwan),
            InterfaceRule(match: "wwan1", metered: false),
            InterfaceRule(match: "docker*", ignore: true),
            InterfaceRule(match: "wlan1", constrained: true),
        ])
        XCTAssertThrowsError(try Configuration(toml: "[[interface]]\nmatch = \"wlan1\"\nconstrained = \"yes\"\n")) { error in
            XCTAssertEqual("\(error)", "interface #1 (wlan1): \"constrained\" must be true or false")
        }
        XCTAssertEqual(try Configuration(toml: "").interfaceRules, [])
        XCTAssertNil(try Configuration(toml: "").connectivityCheck, "no check unless configured")
        let check = try Configuration(toml: "[connectivity]\nurl = \"http://192.0.2.1:8080/ok\"\nexpect_status = 200\nexpect_body = \"OK\"\ntimeout_seconds = 2.5\ninterval_seconds = 0\n").connectivityCheck
        XCTAssertEqual(check, ConnectivityCheck(url: ProbeURL("http://192.0.2.1:8080/ok")!, expectStatus: 200, expectBody: "OK", timeoutSeconds: 2.5, intervalSeconds: 0))
    }

    func testDownloadSettings() throws {
        let defaults = Configuration()
        XCTAssertEqual(defaults.meteredThreshold, 10 * 1024 * 1024)
        XCTAssertEqual(defaults.transferConcurrency, 2)
        let config = try Configuration(toml: "[downloads]\nmetered_threshold = 0\nconcurrency = 5\nnetrc = \"/etc/reachd/netrc\"\nca_file = \"/etc/reachd/ca.pem\"\n")
        XCTAssertEqual(config.netrcPath, "/etc/reachd/netrc")
        XCTAssertEqual(defaults.cacheCapacity, 256 << 20)
        XCTAssertEqual(try Configuration(toml: "[cache]\ncapacity_bytes = 1000\n").cacheCapacity, 1000)
        XCTAssertEqual(defaults.cacheMaximumEntries, 65536)
        XCTAssertEqual(defaults.cacheMaximumEntriesPerUser, 4096)
        let entries = try Configuration(toml: "[cache]\nmax_entries = 10\nmax_entries_per_user = 3\n")
        XCTAssertEqual(entries.cacheMaximumEntries, 10)
        XCTAssertEqual(entries.cacheMaximumEntriesPerUser, 3)
        XCTAssertEqual(config.caFile, "/etc/reachd/ca.pem")
        XCTAssertEqual(config.meteredThreshold, 0)
        XCTAssertEqual(config.transferConcurrency, 5)
        XCTAssertEqual(defaults.readTimeoutSeconds, 30)
        XCTAssertEqual(try Configuration(toml: "[downloads]\nread_timeout_seconds = 2.5\n").readTimeoutSeconds, 2.5)
        let proxied = try Configuration(toml: "[downloads]\nproxy = \"http://proxy:3128\"\nno_proxy = \"localhost,.lan\"\n")
        XCTAssertEqual(proxied.transferProxy, "http://proxy:3128")
        XCTAssertEqual(proxied.transferNoProxy, "localhost,.lan")
        XCTAssertNil(defaults.transferProxy)
        let capped = try Configuration(toml: "[downloads]\nmax_rate = \"2M\"\nmetered_max_rate = 65536\n")
        XCTAssertEqual(capped.transferMaximumRate, 2 << 20)
        XCTAssertEqual(capped.meteredTransferMaximumRate, 65536)
        XCTAssertNil(defaults.transferMaximumRate)
    }

    /// `[connections]` sets reachd's socket limits; unset, the daemon's own defaults apply.
    func testConnections() throws {
        let defaults = try Configuration(toml: "")
        XCTAssertNil(defaults.connectionsPerUser)
        XCTAssertNil(defaults.connections)
        let raised = try Configuration(toml: "[connections]\nper_user = 20000\ntotal = 20000\n")
        XCTAssertEqual(raised.connectionsPerUser, 20000)
        XCTAssertEqual(raised.connections, 20000)
        XCTAssertEqual(try Configuration(toml: "[connections]\ntotal = 100\n").connections, 100)
    }

    /// `[metered]` turns the DHCP, tethering and Wi-Fi hint sources off one by one; `[captive_portal] api` the RFC 8908 queries.
    func testMeteredSourcesAndCaptivePortal() throws {
        let defaults = try Configuration(toml: "")
        XCTAssertEqual(defaults.classifier.meteredSources, .all)
        XCTAssertTrue(defaults.captivePortalAPI)
        XCTAssertTrue(defaults.readsNetworkd)
        let noDHCP = try Configuration(toml: "[metered]\ndhcp = false\n")
        XCTAssertEqual(noDHCP.classifier.meteredSources, [.tethering, .wifiHints])
        XCTAssertEqual(noDHCP.hostJudge.classifier.meteredSources, [.tethering, .wifiHints])
        let none = try Configuration(toml: "[metered]\ndhcp = false\ntethering = false\nwifi_hints = false\n[captive_portal]\napi = false\n")
        XCTAssertEqual(none.meteredSources, [])
        XCTAssertFalse(none.captivePortalAPI)
        XCTAssertFalse(none.readsNetworkd)
    }

    /// Finished jobs are kept at most 10 years: the scheduler counts in microseconds, and a larger value (up to
    /// Int64.max) would overflow there at every start.
    func testKeepFinishedSecondsIsBoundedToTenYears() throws {
        XCTAssertEqual(Configuration().keepFinishedSeconds, 30 * 86400)
        XCTAssertEqual(try Configuration(toml: "[downloads]\nkeep_finished_seconds = 0\n").keepFinishedSeconds, 0)
        XCTAssertEqual(try Configuration(toml: "[downloads]\nkeep_finished_seconds = 315360000\n").keepFinishedSeconds, 315_360_000)
        for bad in ["315360001", "9223372036854775807", "-1", "1.5", "\"30d\""] {
            XCTAssertThrowsError(try Configuration(toml: "[downloads]\nkeep_finished_seconds = \(bad)\n"), bad) { error in
                XCTAssertEqual((error as? ConfigurationError)?.message,
                               "downloads: \"keep_finished_seconds\" must be 0 to 315360000 seconds (10 years; 0 keeps finished jobs)")
            }
        }
    }

    func testMetricsAddresses() throws {
        XCTAssertNil(try Configuration(toml: "").metricsListen, "off by default")
        let config = try Configuration(toml: "[metrics]\nlisten = \"127.0.0.1:9464\"\ntransfers_listen = \"/run/reachd-transfers/metrics.sock\"\n")
        XCTAssertEqual(config.metricsListen, .tcp(host: "127.0.0.1", port: 9464))
        XCTAssertEqual(config.transfersMetricsListen, .unix(path: "/run/reachd-transfers/metrics.sock"))
        XCTAssertEqual(MetricsAddress("[::1]:9464"), .tcp(host: "::1", port: 9464))
        XCTAssertEqual(MetricsAddress("localhost:0"), .tcp(host: "localhost", port: 0))
        XCTAssertEqual(MetricsAddress("[::1]:9464")?.description, "[::1]:9464")
        for bad in ["9464", ":9464", "127.0.0.1:", "127.0.0.1:65536", "::1:9464", "[::1:9464", "a b:1", "relative/path",
                    "/" + String(repeating: "x", count: 200)] {
            XCTAssertNil(MetricsAddress(bad), bad)
        }
    }

    func testErrorsNameTheProblem() {
        let table: [(String, String)] = [
            ("[[interface]]\nmatch = \"x\"\nkind = \"satellite\"", "\"kind\" must be one of"),
            ("[[interface]]\nkind = \"wifi\"", "\"match\" (an interface name or glob) is required"),
            ("[[interface]]\nmatch = \"x\"\nmetred = true", "unknown key \"metred\""),
            ("[[interface]]\nmatch = \"x\"\nmetered = \"yes\"", "\"metered\" must be true or false"),
            ("[[interface]]\nmatch = \"x\"\nignore = 1", "\"ignore\" must be true or false"),
            ("interface = 3", "must be an array of tables"),
            ("colour = \"blue\"", "unknown key \"colour\""),
            ("[[unmetered]]\nprefix = \"10.0.0.0\"", "\"prefix\" must look like"),
            ("[[unmetered]]\nprefix = \"10.0.0.0/33\"", "\"prefix\" must look like"),
            ("[[unmetered]]\n", "give \"host\" or \"prefix\""),
            ("[connectivity]\nurl = \"https://a/\"", "https is not supported"),
            ("[connectivity]\nexpect_status = 204", "\"url\" (http://HOST[:PORT]/PATH) is required"),
            ("[connectivity]\nurl = \"http://a/\"\ntimeout_seconds = 0", "connectivity: timeout_seconds must be"),
            ("[hosts]\nrefresh_seconds = -1", "hosts: refresh_seconds must be"),
            ("[downloads]\nmetered_threshold = \"10M\"", "downloads: \"metered_threshold\" must be a number of bytes"),
            ("[downloads]\nconcurrency = 0", "downloads: \"concurrency\" must be 1 to 64"),
            ("[downloads]\nparallel = 2", "downloads: unknown key \"parallel\""),
            ("[downloads]\nnetrc = \"netrc\"", "downloads: \"netrc\" must be an absolute path"),
            ("[downloads]\nca_file = 3", "downloads: \"ca_file\" must be an absolute path"),
            ("[downloads]\nproxy = 3128", "downloads: \"proxy\" must be a non-empty string"),
            ("[downloads]\nmax_rate = 100", "downloads: \"max_rate\" must be bytes per second"),
            ("[downloads]\nmetered_max_rate = \"fast\"", "downloads: \"metered_max_rate\" must be bytes per second"),
            ("[downloads]\nno_proxy = \"\"", "downloads: \"no_proxy\" must be a non-empty string"),
            ("[metrics]\nlisten = \"9464\"", "metrics: \"listen\" must be HOST:PORT"),
            ("[metrics]\nport = 9464", "metrics: unknown key \"port\""),
            ("[metrics]\nlisten = \"127.0.0.1:9464\"\ntransfers_listen = \"127.0.0.1:9464\"", "must differ"),
            ("[downloads]\nread_timeout_seconds = 0", "downloads: read_timeout_seconds must be a number of seconds from 0.1 to 86400"),
            ("[cache]\ncapacity_bytes = -1", "cache: \"capacity_bytes\" must be a number of bytes"),
            ("[cache]\nsize = 1", "cache: unknown key \"size\""),
            ("[cache]\nmax_entries = 0", "cache: \"max_entries\" must be 1 to 10000000"),
            ("[cache]\nmax_entries_per_user = \"many\"", "cache: \"max_entries_per_user\" must be 1 to 10000000"),
            ("[hosts]\nttl = 5", "unknown key \"ttl\""),
            ("[connectivity]\nurl = \"http://a/\"\nexpect_status = 42", "\"expect_status\" must be"),
            ("[connectivity]\nurl = \"http://a/\"\nretries = 3", "unknown key \"retries\""),
            ("[[interface]\nmatch = 1", "invalid TOML at line 1"),
            ("[connections]\nper_user = 0", "connections: \"per_user\" must be 1 to 1000000"),
            ("[connections]\ntotal = 1000001", "connections: \"total\" must be 1 to 1000000"),
            ("[connections]\nper_user = 10\ntotal = 5", "connections: \"total\" (5) must be at least \"per_user\" (10)"),
            ("[connections]\nidle = 5", "connections: unknown key \"idle\""),
            ("connections = 5", "\"connections\" must be a table"),
            ("[metered]\ndhcp = \"no\"", "metered: \"dhcp\" must be true or false"),
            ("[metered]\nnetworkmanager = false", "metered: unknown key \"networkmanager\""),
            ("metered = false", "\"metered\" must be a table"),
            ("[captive_portal]\napi = 0", "captive_portal: \"api\" must be true or false"),
            ("[captive_portal]\nurl = \"https://a/\"", "captive_portal: unknown key \"url\""),
        ]
        for (text, expected) in table {
            XCTAssertThrowsError(try Configuration(toml: text), text) { error in
                let message = (error as? ConfigurationError)?.message ?? "\(error)"
                XCTAssertTrue(message.contains(expected), "\(message) does not say \(expected)")
            }
        }
    }

    func testLoadNamesTheFile() throws {
        let path = NSTemporaryDirectory() + "reachd-config-\(getpid()).toml"
        defer { unlink(path) }
        XCTAssertThrowsError(try Configuration.load(path: path)) { error in
            XCTAssertTrue("\(error)".contains(path))
        }
        try "[[interface]]\nmatch = \"eth0\"\nmetered = true\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertEqual(try Configuration.load(path: path).interfaceRules, [InterfaceRule(match: "eth0", metered: true)])
    }

    /// A first-time user's mistakes in one line each: the file, the cause and what to do.
    func testLoadSaysTheCauseAndTheFix() throws {
        let path = NSTemporaryDirectory() + "reachd-config-fix-\(getpid()).toml"
        defer { unlink(path) }
        XCTAssertThrowsError(try Configuration.load(path: path)) { error in
            XCTAssertEqual("\(error)", "\(path): cannot read the file (No such file or directory); pass a file reachd can read with --config PATH")
        }
        try "[downloads]\nmax_job = 5\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try Configuration.load(path: path)) { error in
            let message = "\(error)"
            XCTAssertTrue(message.hasPrefix("\(path): downloads: unknown key \"max_job\" (known: "), message)
            XCTAssertTrue(message.hasSuffix("; fix the file and start again (every key: man 5 reachd.toml, docs/configuration.md)"), message)
            XCTAssertFalse(message.contains("\n"), "one line")
        }
    }

    /// Every commented-out setting in reachd.toml.example, switched on, is a valid configuration.
    func testExampleConfigurationIsValid() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../reachd.toml.example").standardized.path
        let text = try String(contentsOfFile: example, encoding: .utf8)
        XCTAssertEqual(try Configuration(toml: text), Configuration(), "everything is commented out")
        let enabled = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix("#[") || line.range(of: #"^#[a-z_]+ ="#, options: .regularExpression) != nil ? String(line.dropFirst()) : String(line)
        }.joined(separator: "\n")
        let config = try Configuration(toml: enabled)
        XCTAssertEqual(config.interfaceRules.count, 4)
        XCTAssertEqual(config.interfaceRules.last, InterfaceRule(match: "sat0", constrained: true))
        XCTAssertEqual(config.unmeteredDestinations.count, 2)
        XCTAssertNotNil(config.connectivityCheck)
        XCTAssertEqual(config.budgets, [DataBudget(match: "wwan*", limitBytes: 5_000_000_000, period: .month(startDay: 1))])
    }
}
