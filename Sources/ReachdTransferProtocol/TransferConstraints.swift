import ReachdProtocol
import ReachdTransferModel

/// Why a request's `constraints` were refused.
struct ConstraintsRefusal: Error {
    var message: String
}

extension TransferRequestParser {
    /// A request's `constraints` object (docs/transfers.md): the keys of `JobConstraints.keys`, lists as arrays of
    /// strings (or one comma-separated string), instants and the window as strings, flags as booleans.
    static func readConstraints(_ value: JSONValue?) -> Result<JobConstraints, ConstraintsRefusal> {
        var constraints = JobConstraints()
        switch value {
        case nil, .null?: return .success(constraints)
        case .object(let members)?:
            guard members.count <= JobConstraints.keys.count else { return .failure(ConstraintsRefusal(message: "\"constraints\" has too many members")) }
            for (key, member) in members.sorted(by: { $0.key < $1.key }) {
                let text: String
                switch member {
                case .string(let string): text = string
                case .bool(let flag): text = flag ? "true" : "false"
                case .array(let items) where items.count <= 8:
                    var names: [String] = []
                    for item in items {
                        guard case .string(let name) = item else { return .failure(ConstraintsRefusal(message: "\"constraints\".\"\(key)\" must list strings")) }
                        names.append(name)
                    }
                    text = names.joined(separator: ",")
                case .null: continue
                default: return .failure(ConstraintsRefusal(message: "\"constraints\".\"\(key)\" has the wrong type"))
                }
                if let refusal = constraints.set(key, to: text) { return .failure(ConstraintsRefusal(message: "constraints: " + refusal)) }
            }
            return .success(constraints)
        default: return .failure(ConstraintsRefusal(message: "\"constraints\" must be an object"))
        }
    }
}
