import Foundation
import ReachdClient
import ReachdProtocol
import ReachdTransferModel
import XCTest

/// Both daemons' metrics endpoints scraped by a real Prometheus (Debian's), in the lab's host namespace,
/// with the example alert rules of docs/reachd-alerts.yml loaded: after a link change and a transfer,
/// Prometheus's HTTP API answers with the new values.
final class PrometheusIntegrationTests: XCTestCase {
    private var lab: TransferLab!
    private var prometheus: Process?
    /// The repository's docs/reachd-alerts.yml.
    private static let rules = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/reachd-alerts.yml").path

    override func tearDown() {
        if let prometheus, prometheus.isRunning {
            prometheus.terminate()
            prometheus.waitUntilExit()
        }
        lab?.tearDown()
        lab = nil
    }

    /// The value of a PromQL query with one result, nil when it has none.
    private func query(_ promql: String) throws -> Double? {
        let answer = try lab.lab.run("ip netns exec \(lab.lab.host) curl -s --max-time 5 http://127.0.0.1:19090/api/v1/query --data-urlencode 'query=\(promql)'")
        guard let json = try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any],
              let data = json["data"] as? [String: Any], let result = data["result"] as? [[String: Any]],
              let value = result.first?["value"] as? [Any], let text = value.last as? String else { return nil }
        return Double(text)
    }

    private func api(_ path: String) throws -> String {
        try lab.lab.run("ip netns exec \(lab.lab.host) curl -s --max-time 5 http://127.0.0.1:19090/api/v1/\(path)")
    }

    private func startPrometheus() throws {
        let dir = lab.lab.directory + "/prometheus"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try """
            global:
              scrape_interval: 1s
              evaluation_interval: 1s
            rule_files: ["\(Self.rules)"]
            scrape_configs:
              - job_name: reachd
                static_configs: [{targets: ["127.0.0.1:19464"]}]
              - job_name: transfers
                static_configs: [{targets: ["127.0.0.1:19465"]}]
            """.write(toFile: dir + "/prometheus.yml", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", lab.lab.host, "/usr/bin/prometheus", "--config.file=\(dir)/prometheus.yml",
                             "--storage.tsdb.path=\(dir)/data", "--web.listen-address=127.0.0.1:19090", "--log.level=warn"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        prometheus = process
        try eventually("Prometheus ready") {
            (try? lab.lab.run("ip netns exec \(lab.lab.host) curl -sf --max-time 2 http://127.0.0.1:19090/-/ready")) != nil
        }
    }

    func testAScrapingPrometheusSeesALinkChangeAndATransfer() throws {
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: "/usr/bin/prometheus"), "Debian's prometheus package is installed by make deps")
        lab = try TransferLab()
        XCTAssertEqual(try lab.lab.run("promtool check rules \(Self.rules) > /dev/null 2>&1; echo $?").trimmingCharacters(in: .whitespacesAndNewlines), "0")
        try lab.startTestServer()
        try lab.lab.startDaemon(config: "[metrics]\nlisten = \"127.0.0.1:19464\"\n")
        try lab.startDaemon(config: "[downloads]\nmetered_threshold = 1048576\n[metrics]\ntransfers_listen = \"127.0.0.1:19465\"\n")
        try startPrometheus()
        try eventually("both daemons scraped") { try query("up{job=\"reachd\"}") == 1 && query("up{job=\"transfers\"}") == 1 }
        try eventually("the wired path") { try query("reachd_path_info{interface=\"eth0\",status=\"wired\"}") == 1 }
        XCTAssertEqual(try query("reachd_metered"), 0)
        XCTAssertEqual(try query("reachd_reachable"), 1)

        try lab.eth0Down()
        try eventually("metered over wwan0", detail: (try? api("query?query=reachd_path_info")) ?? "") {
            try query("reachd_metered") == 1 && query("reachd_path_info{interface=\"wwan0\",status=\"wwan\"}") == 1
        }
        try eventually("the change and eth0's flap counted") {
            try (query("reachd_verdict_changes_total") ?? 0) >= 1 && (query("reachd_link_flaps_total{interface=\"eth0\"}") ?? 0) >= 1
        }
        XCTAssertNil(try query("reachd_path_info{interface=\"eth0\"}"), "the old path is gone from the exposition")

        let sum = try lab.serve("m.bin", bytes: 200_000)
        let id = try lab.add(lab.url("m.bin"), output: lab.out + "/m.bin")
        let done = try lab.waitFor(id, "completed over wwan0") { $0.state.isTerminal }
        XCTAssertEqual(done.state, .completed, done.reason ?? "")
        XCTAssertEqual(try lab.sha256(lab.out + "/m.bin"), sum)
        try eventually("the bytes counted as metered, the job as completed") {
            try (query("reachd_transfers_received_bytes_total{route=\"metered\"}") ?? 0) >= 200_000
                && query("reachd_transfers_jobs{state=\"completed\"}") == 1
        }
        XCTAssertEqual(try query("reachd_transfers_received_bytes_total{route=\"unmetered\"}"), 0)
        XCTAssertGreaterThan(try query("process_resident_memory_bytes{job=\"reachd\"}") ?? 0, 1_000_000)

        // The example rules are loaded and evaluated: on wwan0 the metered alert is pending (it fires after 4 h).
        let rules = try api("rules")
        XCTAssertEqual(rules.components(separatedBy: "\"health\":\"ok\"").count - 1, 5, rules)
        try eventually("ReachdMeteredForHours pending", detail: (try? api("alerts")) ?? "") {
            let alerts = try api("alerts")
            return alerts.contains("\"alertname\":\"ReachdMeteredForHours\"") && alerts.contains("\"state\":\"pending\"")
        }
    }
}
