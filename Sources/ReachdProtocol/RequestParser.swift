#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Parses one request line: a JSON object with `op`, optional `id`, and `host` or `hosts` (else the target is `internet`).
public enum RequestParser {
    public static func parse(_ line: [UInt8]) -> Result<Request, ProtocolError> {
        let fields: [String: JSONValue], id: RequestID?
        switch RequestLine.object(line) {
        case .failure(let error): return .failure(error)
        case .success(let parsed): (fields, id) = parsed
        }
        guard case .string(let opName)? = fields["op"] else {
            return .failure(ProtocolError(.badRequest, "a request needs \"op\" as a string", id: id))
        }
        guard let op = Operation(rawValue: opName) else {
            let known = Operation.allCases.map(\.rawValue).joined(separator: ", ")
            return .failure(ProtocolError(.unknownOp, "unknown op \"\(opName)\"; known: \(known)", id: id))
        }
        switch fields["target"] {
        case nil, .null?, .string("internet")?: break
        case .string(let t)?: return .failure(ProtocolError(.badRequest, "unknown target \"\(t)\"; supported: internet (use \"host\" for hosts)", id: id))
        default: return .failure(ProtocolError(.badRequest, "\"target\" must be a string", id: id))
        }
        var hosts: [String] = []
        switch (fields["host"], fields["hosts"]) {
        case (nil, nil), (.null?, nil), (nil, .null?): break
        case (.string(let host)?, nil): hosts = [host]
        case (nil, .array(let values)?):
            for value in values {
                guard case .string(let host) = value else {
                    return .failure(ProtocolError(.badRequest, "\"hosts\" must be an array of strings", id: id))
                }
                hosts.append(host)
            }
            guard !hosts.isEmpty, hosts.count <= Request.maximumHosts else {
                return .failure(ProtocolError(.badRequest, "\"hosts\" needs 1 to \(Request.maximumHosts) names", id: id))
            }
        default:
            return .failure(ProtocolError(.badRequest, "give either \"host\" (a string) or \"hosts\" (an array of strings)", id: id))
        }
        if let bad = hosts.first(where: { !Request.isValidHost($0) }) {
            return .failure(ProtocolError(.badRequest, "not a host name or address: \"\(bad.prefix(64))\"", id: id))
        }
        if op != .subscribe && hosts.count > 1 {
            return .failure(ProtocolError(.badRequest, "\(op.rawValue) takes one host; subscribe takes many", id: id))
        }
        return .success(Request(op: op, id: id, hosts: op == .ping ? [] : hosts))
    }
}

/// What every request line starts with: a JSON object, and its optional `id`.
package enum RequestLine {
    package static func object(_ line: [UInt8]) -> Result<([String: JSONValue], RequestID?), ProtocolError> {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(line)) else {
            return .failure(ProtocolError(.badJSON, "the line is not valid JSON"))
        }
        guard case .object(let fields) = value else {
            return .failure(ProtocolError(.badRequest, "a request must be a JSON object"))
        }
        switch fields["id"] {
        case nil, .null?: return .success((fields, nil))
        case .string(let s)?: return .success((fields, .string(s)))
        case .number(let n)? where n == n.rounded() && abs(n) < 9.0e15: return .success((fields, .number(Int64(n))))
        default: return .failure(ProtocolError(.badRequest, "\"id\" must be an integer or a string"))
        }
    }
}
