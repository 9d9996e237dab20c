#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ReachdModel

/// The protocol version every message carries in `version`.
public let protocolVersion = 1

/// The longest request line the daemon accepts, in bytes.
public let maximumRequestLineLength = 16 * 1024

/// A client's request id, echoed in the reply: a JSON number or string.
public enum RequestID: Hashable, Sendable, Codable {
    case number(Int64)
    case string(String)

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let n = try? c.decode(Int64.self) {
            self = .number(n)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "id must be an integer or a string"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .number(let n): try c.encode(n)
        case .string(let s): try c.encode(s)
        }
    }
}

/// The operations a client can ask for.
public enum Operation: String, Hashable, Sendable, CaseIterable {
    /// The current verdict, once.
    case status
    /// The current verdict, then one event per change until the client goes.
    case subscribe
    /// Liveness check.
    case ping
}

/// A parsed request line.
public struct Request: Hashable, Sendable {
    public var op: Operation
    public var id: RequestID?
    /// Host targets (names or IP literals); empty means the target `internet`.
    public var hosts: [String]

    public init(op: Operation, id: RequestID? = nil, hosts: [String] = []) {
        self.op = op
        self.id = id
        self.hosts = hosts
    }

    /// The most hosts one `subscribe` may name.
    public static let maximumHosts = 1024

    /// Whether `name` can be a host target: 1 to 253 characters of letters, digits and `.-_:%`
    /// (names, IPv4 and IPv6 literals, scoped IPv6).
    public static func isValidHost(_ name: String) -> Bool {
        guard (1...253).contains(name.utf8.count) else { return false }
        return name.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                || c == UInt8(ascii: ".") || c == UInt8(ascii: "-") || c == UInt8(ascii: "_")
                || c == UInt8(ascii: ":") || c == UInt8(ascii: "%")
        }
    }
}

/// Why a request line was refused; `code` is the stable wire name.
public struct ProtocolError: Error, Hashable, Sendable {
    public enum Code: String, Hashable, Sendable, Codable {
        /// The line is not valid JSON.
        case badJSON = "bad_json"
        /// Valid JSON, but not a request object (no `op`, wrong types, unknown target).
        case badRequest = "bad_request"
        /// `op` names no known operation.
        case unknownOp = "unknown_op"
        /// The line exceeded the length limit.
        case lineTooLong = "line_too_long"
        /// No job with that id (or not one of the caller's).
        case notFound = "not_found"
        /// The caller's uid may not do this (create that output file, act on another user's job).
        case permissionDenied = "permission_denied"
        /// The URL cannot be downloaded (scheme, host, syntax).
        case invalidURL = "invalid_url"
        /// The output path is not usable.
        case invalidOutput = "invalid_output"
        /// The job's state does not allow the operation (e.g. resume a completed job).
        case conflict = "conflict"
        /// The caller (or the service) holds as many jobs as allowed: remove finished ones first.
        case limit = "limit"
        /// The daemon could not do it (store unwritable, disk full); the message says what failed.
        case internalError = "internal"
        /// `fetch`: neither the network nor the cache can give the body; the message says why.
        case unavailable = "unavailable"
        /// The connection was refused: its user (or everyone) holds as many connections as the daemon serves.
        case tooManyConnections = "too_many_connections"
        /// reachd: the caller's uid has as many host requests waiting for their answers as one user may.
        case tooManyRequests = "too_many_requests"
    }

    public var code: Code
    public var message: String
    /// The request's id when it could be read.
    public var id: RequestID?

    public init(_ code: Code, _ message: String, id: RequestID? = nil) {
        self.code = code
        self.message = message
        self.id = id
    }
}

extension Request: Encodable {
    private enum CodingKeys: String, CodingKey {
        case op, id, hosts
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(op.rawValue, forKey: .op)
        try c.encodeIfPresent(id, forKey: .id)
        if !hosts.isEmpty { try c.encode(hosts, forKey: .hosts) }
    }

    /// The request as one line: compact JSON and `\n`.
    public func encodedLine() -> [UInt8] { encodeJSONLine(self) }
}
