import Foundation

/// The members of a D-Bus introspection file (dbus/*.xml), read as written there (one interface per file, tags
/// with double-quoted attributes), each as the line a manual page's interface listing declares it with, in the
/// notation of systemd's org.freedesktop.*(5) pages: `readonly b Reachable;`, `CheckHost(in s name, out a{sv}
/// verdict);`, `JobChanged(s id, u uid);`.
struct InterfaceDescription {
    struct Member {
        let name: String
        let declaration: String
    }

    var path = ""
    var interface = ""
    var members: [Member] = []

    init(contentsOfFile file: String) throws {
        var text = try String(contentsOfFile: file, encoding: .utf8)
        while let start = text.range(of: "<!--"), let end = text.range(of: "-->", range: start.upperBound..<text.endIndex) {
            text.removeSubrange(start.lowerBound..<end.upperBound)
        }
        // The member being read: its kind, name, property type and access, and its arguments so far.
        var current: (kind: String, attributes: [String: String], arguments: [[String: String]])?
        func finish() {
            guard let member = current, let name = member.attributes["name"] else { return }
            let declaration: String
            switch member.kind {
            case "property":
                let access = ["read": "readonly", "write": "writeonly", "readwrite": "readwrite"][member.attributes["access"] ?? ""] ?? "?"
                declaration = "\(access) \(member.attributes["type"] ?? "?") \(name);"
            case "method":
                let arguments = member.arguments.map { "\($0["direction"] ?? "in") \($0["type"] ?? "?") \($0["name"] ?? "?")" }
                declaration = "\(name)(\(arguments.joined(separator: ", ")));"
            default:
                declaration = "\(name)(\(member.arguments.map { "\($0["type"] ?? "?") \($0["name"] ?? "?")" }.joined(separator: ", ")));"
            }
            members.append(Member(name: name, declaration: declaration))
            current = nil
        }
        for chunk in text.split(separator: "<").dropFirst() {
            let tag = chunk.prefix(while: { $0 != ">" })
            let kind = String(tag.prefix(while: { $0 != " " && $0 != ">" && $0 != "/" }))
            let attributes = Self.attributes(of: tag)
            switch kind {
            case "node": path = attributes["name"] ?? ""
            case "interface": interface = attributes["name"] ?? ""
            case "property", "method", "signal":
                finish()
                current = (kind, attributes, [])
            case "arg": current?.arguments.append(attributes)
            case "/property", "/method", "/signal", "/interface": finish()
            default: break
            }
        }
        finish()
    }

    /// `key="value"` pairs of a tag.
    private static func attributes(of tag: Substring) -> [String: String] {
        let parts = tag.split(separator: "\"", omittingEmptySubsequences: false)
        var attributes: [String: String] = [:]
        for index in stride(from: 0, to: parts.count - 1, by: 2) {
            guard let key = parts[index].split(separator: " ").last, key.hasSuffix("=") else { continue }
            attributes[String(key.dropLast())] = String(parts[index + 1])
        }
        return attributes
    }
}
