import Foundation
import ReachdModel
import ReachdNetlink
import ReachdTestSupport
import XCTest

/// `RouteLookup`'s batched answers against `ip -j route get`, one destination at a time, on random mixes of
/// routes, reject routes (unreachable, prohibit, blackhole, throw) and missing routes in three tables and both
/// families. Every destination must get the kernel's own answer, whatever the others in its batch got.
final class RouteLookupIntegrationTests: XCTestCase {
    private var lab: NetLab!

    override func setUpWithError() throws {
        lab = try NetLab.make()
        try lab.addLink("eth0", ipv4: "10.1.0.2/24", ipv6: "2001:db8:1::2/64")
        try lab.addLink("wlan0", ipv4: "10.2.0.2/24", ipv6: "2001:db8:2::2/64")
        for (table, v4, v6) in [(100, "198.51.100.0/24", "2001:db8:100::/48"), (200, "203.0.113.0/24", "2001:db8:200::/48")] {
            try lab.ip("rule add to \(v4) table \(table) pref \(900 + table)")
            try lab.ip("-6 rule add to \(v6) table \(table) pref \(900 + table)")
        }
    }

    override func tearDown() {
        lab?.tearDown()
    }

    /// The random topology of one round, as `ip route` commands, and the destinations to ask about.
    private struct Round {
        var commands: [String] = []
        var destinations: [String] = []
    }

    private func makeRound<G: RandomNumberGenerator>(_ random: inout G) -> Round {
        var round = Round()
        let kinds = ["unicast", "unreachable", "prohibit", "blackhole", "throw", "none"]
        // IPv4: /28 blocks in 198.51.100.0/24 (table 100), 203.0.113.0/24 (table 200), 192.0.2.0/24 (main).
        for (base, table) in [("198.51.100", "100"), ("203.0.113", "200"), ("192.0.2", "main")] {
            for block in 0..<16 {
                let kind = kinds.randomElement(using: &random)!
                let prefix = "\(base).\(block * 16)/28"
                switch kind {
                case "none": continue
                case "unicast":
                    let via = Bool.random(using: &random) ? "via 10.1.0.1 dev eth0" : "via 10.2.0.1 dev wlan0"
                    round.commands.append("route add \(prefix) \(via) table \(table)")
                case "throw" where table == "main": continue
                default: round.commands.append("route add \(kind) \(prefix) table \(table)")
                }
            }
            for _ in 0..<12 { round.destinations.append("\(base).\(Int.random(in: 1...254, using: &random))") }
        }
        // IPv6: /64s in the tables' /48s and in main's 2001:db8:5::/48.
        for (base, table) in [("2001:db8:100", "100"), ("2001:db8:200", "200"), ("2001:db8:5", "main")] {
            for block in 0..<8 {
                let kind = kinds.randomElement(using: &random)!
                let prefix = "\(base):\(block)::/64"
                switch kind {
                case "none": continue
                case "unicast":
                    let via = Bool.random(using: &random) ? "via 2001:db8:1::1 dev eth0" : "via 2001:db8:2::1 dev wlan0"
                    round.commands.append("-6 route add \(prefix) \(via) table \(table)")
                case "throw" where table == "main": continue
                default: round.commands.append("-6 route add \(kind) \(prefix) table \(table)")
                }
            }
            for _ in 0..<8 { round.destinations.append("\(base):\(Int.random(in: 0...9, using: &random))::\(Int.random(in: 1...99, using: &random))") }
        }
        // Sometimes a default route, so that a missing route is sometimes "no route" and sometimes the default.
        if Bool.random(using: &random) { round.commands.append("route add default via 10.1.0.1 dev eth0") }
        if Bool.random(using: &random) { round.commands.append("-6 route add default via 2001:db8:2::1 dev wlan0") }
        round.destinations.shuffle(using: &random)
        return round
    }

    /// The kernel's answer as `ip -j route get` reads it: "dev gateway type" or the refusal's message.
    private func ipAnswer(_ destination: String, links: [Int32: String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["-n", lab.host, "-j", "route", "get", destination]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let error = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            return "refused: " + error.replacingOccurrences(of: "RTNETLINK answers: ", with: "").trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let routes = try XCTUnwrap(try JSONSerialization.jsonObject(with: output) as? [[String: Any]])
        let route = try XCTUnwrap(routes.first)
        return "\(route["dev"] as? String ?? "-") \(route["gateway"] as? String ?? "-") \(route["type"] as? String ?? "unicast")"
    }

    private func lookupAnswer(_ decision: RouteDecision, links: [Int32: String]) -> String {
        switch decision {
        case .route(let type, let index, let gateway, _):
            return "\(links[index] ?? "?\(index)") \(gateway?.description ?? "-") \(type)"
        case .refused(let code):
            return "refused: " + String(cString: strerror(code))
        case .failed(let code):
            return "unanswered: " + String(cString: strerror(code))
        }
    }

    func testBatchedLookupsGiveEachDestinationTheKernelsOwnAnswer() throws {
        let seed = UInt64.random(in: 1...UInt64.max)
        var random = SeededGenerator(seed: seed)
        let lookup = try lab.inNamespace { try RouteLookup() }
        let linkList = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(lab.run("ip -n \(lab.host) -j link show").utf8)) as? [[String: Any]])
        let links = Dictionary(uniqueKeysWithValues: linkList.compactMap { link -> (Int32, String)? in
            guard let index = link["ifindex"] as? Int, let name = link["ifname"] as? String else { return nil }
            return (Int32(index), name)
        })
        for roundNumber in 1...4 {
            let round = makeRound(&random)
            // `ip route add` marks its routes proto boot: flushing those leaves the links' own routes.
            for family in ["-4", "-6"] {
                for table in ["main", "100", "200"] { _ = try? lab.run("ip -n \(lab.host) \(family) route flush table \(table) proto boot") }
            }
            for command in round.commands { try lab.ip(command) }
            let addresses = try round.destinations.map { try XCTUnwrap(IPAddress($0), $0) }
            let batched = lookup.lookup(addresses)
            XCTAssertEqual(batched.count, addresses.count)
            var refusals = 0
            var mismatches: [String] = []
            for (destination, decision) in zip(round.destinations, batched) {
                if case .refused = decision { refusals += 1 }
                if case .route(let type, _, _, _) = decision, type != .unicast { refusals += 1 }
                let kernel = try ipAnswer(destination, links: links), batch = lookupAnswer(decision, links: links)
                if kernel != batch { mismatches.append("\(destination): batch \(batch), ip \(kernel)") }
            }
            XCTAssertEqual(mismatches, [], "round \(roundNumber) (seed \(seed)); routes: \(round.commands.joined(separator: "; "))")
            XCTAssertGreaterThan(refusals, 0, "round \(roundNumber) (seed \(seed)) had no rejected destination to test with")
        }
    }
}
