#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Parses one request line: a JSON object with `op`, optional `id` and `target`.
public enum RequestParser {
    public static func parse(_ line: [UInt8]) -> Result<Request, ProtocolError> {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(line)) else {
            return .failure(ProtocolError(.badJSON, "the line is not valid JSON"))
        }
        guard case .object(let fields) = value else {
            return .failure(ProtocolError(.badRequest, "a request must be a JSON object"))
        }
        var id: RequestID?
        switch fields["id"] {
        case nil, .null?: id = nil
        case .string(let s)?: id = .string(s)
        case .number(let n)? where n == n.rounded() && abs(n) < 9.0e15: id = .number(Int64(n))
        default:
            return .failure(ProtocolError(.badRequest, "\"id\" must be an integer or a string"))
        }
        guard case .string(let opName)? = fields["op"] else {
            return .failure(ProtocolError(.badRequest, "a request needs \"op\" as a string", id: id))
        }
        guard let op = Operation(rawValue: opName) else {
            let known = Operation.allCases.map(\.rawValue).joined(separator: ", ")
            return .failure(ProtocolError(.unknownOp, "unknown op \"\(opName)\"; known: \(known)", id: id))
        }
        var target = "internet"
        switch fields["target"] {
        case nil, .null?: break
        case .string(let t)?: target = t
        default: return .failure(ProtocolError(.badRequest, "\"target\" must be a string", id: id))
        }
        guard target == "internet" else {
            return .failure(ProtocolError(.badRequest, "unknown target \"\(target)\"; supported: internet", id: id))
        }
        return .success(Request(op: op, id: id, target: target))
    }
}
