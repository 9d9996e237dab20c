import Foundation
import XCTest

/// The manual pages in man/ (installed by `make install` and the package): each renders without a warning from
/// man, and each names every option and verb its command has (from the command's own description, ArgumentParser's
/// --experimental-dump-help), and every member of its D-Bus interface (from dbus/*.xml), so that a new option or
/// member cannot be left out of its page.
final class ManualPageIntegrationTests: XCTestCase {
    static let pages = CommandLineIntegrationTests.packageRoot + "/man"

    func testEachPageRendersWithoutWarnings() throws {
        for page in ["reachctl.1", "reachd.8", "reachd-transfers.8", "reachd.toml.5", "org.reachd.Reachability1.5", "org.reachd.Transfers1.5", "org.reachd.NetworkManagerFace1.5"] {
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

    /// org.reachd.Reachability1(5), org.reachd.Transfers1(5) and org.reachd.NetworkManagerFace1(5) list their interface's members as the interface file
    /// declares them (each property with its type, each method and signal with its arguments; none more) and describe
    /// each in an entry of its own (a `.TP` whose tag names it).
    func testEachInterfacePageListsAndDescribesEveryMemberOfItsInterface() throws {
        for name in ["org.reachd.Reachability1", "org.reachd.Transfers1", "org.reachd.NetworkManagerFace1"] {
            let interface = try InterfaceDescription(contentsOfFile: CommandLineIntegrationTests.packageRoot + "/dbus/\(name).xml")
            XCTAssertEqual(interface.interface, name)
            XCTAssertFalse(interface.members.isEmpty, "the members of \(name).xml were read: \(interface.members)")
            let lines = try String(contentsOfFile: Self.pages + "/\(name).5", encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            XCTAssertTrue(lines.contains("node \(interface.path) {"), "\(name)(5) lists the object \(interface.path)")

            // The listing: the lines between `interface NAME {` and its `};`, but the `methods:`-style headings.
            let start = try XCTUnwrap(lines.firstIndex { $0.trimmingCharacters(in: .whitespaces) == "interface \(name) {" }, "\(name)(5) lists the interface")
            let listing = lines[(start + 1)...].prefix { $0.trimmingCharacters(in: .whitespaces) != "};" }
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.hasSuffix(":") }
            let declared = Set(interface.members.map(\.declaration))
            XCTAssertEqual(declared.subtracting(listing).sorted(), [], "\(name)(5) does not list these as \(name).xml declares them")
            XCTAssertEqual(Set(listing).subtracting(declared).sorted(), [], "\(name)(5) lists what \(name).xml does not declare")

            // The entries: the words of each `.TP` tag outside indented lists (.RS … .RE: a method's keys and options,
            // where CheckHost's verdict repeats property names).
            var described: Set<String> = [], depth = 0
            for (index, line) in lines.enumerated() {
                if line.hasPrefix(".RS") { depth += 1 }
                if line.hasPrefix(".RE") { depth -= 1 }
                guard line == ".TP", depth == 0, index + 1 < lines.count else { continue }
                let tag = lines[index + 1].replacingOccurrences(of: "\\%", with: "").drop { $0 != " " }
                described.formUnion(tag.split { !$0.isLetter && !$0.isNumber && $0 != "_" && $0 != "." }.map(String.init))
            }
            XCTAssertEqual(interface.members.map(\.name).filter { !described.contains($0) }, [], "\(name)(5) does not describe these")
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
