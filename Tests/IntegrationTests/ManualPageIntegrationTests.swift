import Foundation
import XCTest

/// The manual pages in man/ (installed by `make install` and the package): each renders without a warning from
/// man, and each names every option and verb its command has (from the command's own description, ArgumentParser's
/// --experimental-dump-help), so that a new option cannot be left out of its page.
final class ManualPageIntegrationTests: XCTestCase {
    static let pages = CommandLineIntegrationTests.packageRoot + "/man"

    func testEachPageRendersWithoutWarnings() throws {
        for page in ["reachctl.1", "reachd.8", "reachd-transfers.8", "reachd.toml.5"] {
            var environment = ProcessInfo.processInfo.environment
            environment["MANWIDTH"] = "80"
            let result = try CommandLineIntegrationTests.run("/usr/bin/man", ["--warnings", "-l", Self.pages + "/" + page], environment: environment)
            XCTAssertEqual(result.status, 0, page)
            XCTAssertEqual(result.err, "", "\(page) draws warnings")
            XCTAssertTrue(result.out.contains("NAME") && result.out.contains("SEE ALSO"), page)
        }
    }

    func testEachCommandsPageNamesEveryOptionAndVerb() throws {
        for (command, page) in [("reachctl", "reachctl.1"), ("reachd", "reachd.8"), ("reachd-transfers", "reachd-transfers.8")] {
            let text = try String(contentsOfFile: Self.pages + "/" + page, encoding: .utf8)
            let dump = try CommandLineIntegrationTests.run(NetLab.binary(command), ["--experimental-dump-help"])
            XCTAssertEqual(dump.status, 0, dump.err)
            let tool = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(dump.out.utf8)) as? [String: Any])
            var missing: [String] = []
            func visit(_ info: [String: Any], verbs: [String]) {
                for argument in info["arguments"] as? [[String: Any]] ?? [] where argument["shouldDisplay"] as? Bool ?? true {
                    for name in argument["names"] as? [[String: Any]] ?? [] where name["kind"] as? String == "long" {
                        let option = "--" + (name["name"] as? String ?? "")
                        if !text.contains(option.replacingOccurrences(of: "-", with: "\\-")) { missing.append(option) }
                    }
                }
                for sub in info["subcommands"] as? [[String: Any]] ?? [] {
                    guard let name = sub["commandName"] as? String, name != "help" else { continue }
                    if !text.contains(name.replacingOccurrences(of: "-", with: "\\-")) { missing.append((verbs + [name]).joined(separator: " ")) }
                    visit(sub, verbs: verbs + [name])
                }
            }
            visit(try XCTUnwrap(tool["command"] as? [String: Any]), verbs: [])
            XCTAssertEqual(Set(missing), [], "\(page) does not name what \(command) has")
        }
    }

    /// reachd.toml(5) names every section and key of reachd.toml.example (which ConfigurationTests holds to the reader).
    func testTheConfigurationPageNamesEveryKeyOfTheExample() throws {
        let page = try String(contentsOfFile: Self.pages + "/reachd.toml.5", encoding: .utf8)
        let example = try String(contentsOfFile: CommandLineIntegrationTests.packageRoot + "/reachd.toml.example", encoding: .utf8)
        var names: Set<String> = []
        for line in example.split(separator: "\n") {
            let text = line.drop(while: { $0 == "#" || $0 == " " })
            if text.hasPrefix("[") {
                names.insert(String(text.filter { $0 != "[" && $0 != "]" }.prefix(while: { $0 != " " })))
            } else if let equals = text.firstIndex(of: "="), text[..<equals].allSatisfy({ $0.isLetter || $0 == "_" || $0 == " " }) {
                names.insert(text[..<equals].trimmingCharacters(in: .whitespaces))
            }
        }
        names.remove("")
        XCTAssertGreaterThan(names.count, 30, "the example's keys were read: \(names.sorted())")
        XCTAssertEqual(names.filter { !page.contains($0) }, [], "reachd.toml(5) does not name them")
    }
}
