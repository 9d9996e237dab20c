#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ReachdProtocol
import ReachdTransferModel

/// A request to the transfer service (`reachd-transfers`), one JSON object per line (docs/transfers.md).
public struct TransferRequest: Hashable, Sendable {
    public enum Operation: String, Hashable, Sendable, CaseIterable {
        case add, upload, fetch, list, show, pause, resume, cancel, refresh, remove, clean, watch, ping, limit
    }

    public var op: Operation
    public var id: RequestID?
    /// The job acted on (`show`, `pause`, `resume`, `cancel`, `refresh`; optional for `watch`).
    public var job: String?
    /// What to download (`add`).
    public var download: DownloadSpec?
    /// What to upload (`upload`).
    public var upload: UploadSpec?
    /// The URL to `fetch` through the cache.
    public var fetch: String?
    /// The proxy `fetch` goes through: a proxy URL, or `none` (`JobProxy`); nil: the instance's.
    public var fetchProxy: String?
    /// `limit`: the job's new cap in bytes per second; nil: none of its own.
    public var maxRate: Int64?

    public init(op: Operation, id: RequestID? = nil, job: String? = nil, download: DownloadSpec? = nil, upload: UploadSpec? = nil,
                fetch: String? = nil, fetchProxy: String? = nil) {
        self.fetch = fetch
        self.fetchProxy = fetchProxy
        self.op = op
        self.id = id
        self.job = job
        self.download = download
        self.upload = upload
    }

    /// The request as one line: compact JSON and `\n`.
    public func encodedLine() -> [UInt8] { encodeJSONLine(self) }
}

extension TransferRequest: Encodable {
    private enum CodingKeys: String, CodingKey {
        case op, id, job, url, output, allowMetered, priority, sha256, refreshEvery, allowInsecureAuth, maxRate
        case file, method, fields, fileField, constraints, proxy
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(op.rawValue, forKey: .op)
        try c.encodeIfPresent(id, forKey: .id)
        try c.encodeIfPresent(job, forKey: .job)
        if let download {
            try c.encode(download.url, forKey: .url)
            try c.encode(download.output, forKey: .output)
            try c.encode(download.allowMetered, forKey: .allowMetered)
            try c.encode(download.priority, forKey: .priority)
            try c.encodeIfPresent(download.sha256, forKey: .sha256)
            try c.encodeIfPresent(download.refreshSeconds, forKey: .refreshEvery)
            if download.allowInsecureAuth { try c.encode(true, forKey: .allowInsecureAuth) }
            if !download.constraints.isEmpty { try c.encode(download.constraints, forKey: .constraints) }
            try c.encodeIfPresent(download.proxy, forKey: .proxy)
            try c.encodeIfPresent(download.maxRate, forKey: .maxRate)
        }
        if let upload {
            try c.encode(upload.file, forKey: .file)
            try c.encode(upload.url, forKey: .url)
            try c.encode(upload.method, forKey: .method)
            try c.encode(upload.fields, forKey: .fields)
            try c.encode(upload.fileField, forKey: .fileField)
            try c.encode(upload.allowMetered, forKey: .allowMetered)
            try c.encode(upload.priority, forKey: .priority)
            if upload.allowInsecureAuth { try c.encode(true, forKey: .allowInsecureAuth) }
            if !upload.constraints.isEmpty { try c.encode(upload.constraints, forKey: .constraints) }
            try c.encodeIfPresent(upload.proxy, forKey: .proxy)
            try c.encodeIfPresent(upload.maxRate, forKey: .maxRate)
        }
        try c.encodeIfPresent(fetch, forKey: .url)
        try c.encodeIfPresent(fetchProxy, forKey: .proxy)
        if op == .limit { try c.encode(maxRate, forKey: .maxRate) }
    }
}

/// Parses one transfer request line; every refusal names the field at fault.
public enum TransferRequestParser {
    /// `allowMetered`, `allowInsecureAuth` and `priority`, which add and upload share; the refusal, or nil.
    private static func readCommon(_ fields: [String: JSONValue], allowMetered: inout Bool, allowInsecureAuth: inout Bool,
                                   priority: inout Priority) -> String? {
        if let refusal = readFlag(fields, "allowMetered", into: &allowMetered) ?? readFlag(fields, "allowInsecureAuth", into: &allowInsecureAuth) {
            return refusal
        }
        switch fields["priority"] {
        case nil, .null?: return nil
        case .string(let name)? where Priority(rawValue: name) != nil:
            priority = Priority(rawValue: name)!
            return nil
        default: return "\"priority\" must be low, normal or high"
        }
    }

    /// `proxy` (add, upload, fetch): `none` or a proxy URL; the refusal never quotes it (it may hold a password).
    private static func readProxy(_ fields: [String: JSONValue], into proxy: inout String?) -> String? {
        switch fields["proxy"] {
        case nil, .null?: return nil
        case .string(let text)?:
            do { try JobProxy.validate(text) } catch { return "\"proxy\": \(error)" }
            proxy = text
            return nil
        default: return "\"proxy\" must be \"none\" or a proxy URL"
        }
    }

    /// `maxRate` (add, upload, limit): bytes per second within `TokenBucket.rates`, or null.
    private static func readRate(_ fields: [String: JSONValue], into rate: inout Int64?) -> String? {
        switch fields["maxRate"] {
        case nil, .null?: return nil
        case .number(let value)? where value == value.rounded() && (Double(TokenBucket.rates.lowerBound)...Double(TokenBucket.rates.upperBound)).contains(value):
            rate = Int64(value)
            return nil
        default: return "\"maxRate\" must be a number of bytes per second from \(TokenBucket.rates.lowerBound) to \(TokenBucket.rates.upperBound), or null"
        }
    }

    private static func readFlag(_ fields: [String: JSONValue], _ key: String, into flag: inout Bool) -> String? {
        switch fields[key] {
        case nil, .null?: return nil
        case .bool(let value)?:
            flag = value
            return nil
        default: return "\"\(key)\" must be true or false"
        }
    }

    /// A job id as given by a client: 1-64 ASCII hex digits, lowercased; nil when it is not one.
    public static func jobID(_ text: String) -> String? {
        guard !text.isEmpty, text.count <= 64, text.allSatisfy(\.isASCIIHexDigit) else { return nil }
        return text.lowercased()
    }

    /// A SHA-256 as 64 ASCII hex digits, lowercased; nil when it is not one.
    public static func sha256(_ text: String) -> String? {
        guard text.count == 64, text.allSatisfy(\.isASCIIHexDigit) else { return nil }
        return text.lowercased()
    }

    public static func parse(_ line: [UInt8]) -> Result<TransferRequest, ProtocolError> {
        let fields: [String: JSONValue], id: RequestID?
        switch RequestLine.object(line) {
        case .failure(let error): return .failure(error)
        case .success(let parsed): (fields, id) = parsed
        }
        func bad(_ message: String) -> Result<TransferRequest, ProtocolError> { .failure(ProtocolError(.badRequest, message, id: id)) }
        guard case .string(let opName)? = fields["op"] else { return bad("a request needs \"op\" as a string") }
        guard let op = TransferRequest.Operation(rawValue: opName) else {
            let known = TransferRequest.Operation.allCases.map(\.rawValue).joined(separator: ", ")
            return .failure(ProtocolError(.unknownOp, "unknown op \"\(opName)\"; known: \(known)", id: id))
        }
        var request = TransferRequest(op: op, id: id)
        switch fields["job"] {
        case nil, .null?: break
        case .string(let text)?:
            guard let job = jobID(text) else { return bad("\"job\" must be a job id (hex digits)") }
            request.job = job
        default: return bad("\"job\" must be a job id (hex digits)")
        }
        switch op {
        case .show, .pause, .resume, .cancel, .refresh, .remove:
            guard request.job != nil else { return bad("\(op.rawValue) needs \"job\"") }
        case .limit:
            guard request.job != nil else { return bad("limit needs \"job\"") }
            guard fields["maxRate"] != nil else { return bad("limit needs \"maxRate\" (bytes per second, or null: none of its own)") }
            if let refusal = readRate(fields, into: &request.maxRate) { return bad(refusal) }
        case .add:
            guard case .string(let url)? = fields["url"] else { return bad("add needs \"url\" as a string") }
            guard case .string(let output)? = fields["output"] else { return bad("add needs \"output\" as a string (an absolute path)") }
            var spec = DownloadSpec(url: url, output: output)
            if let refusal = readCommon(fields, allowMetered: &spec.allowMetered, allowInsecureAuth: &spec.allowInsecureAuth,
                                        priority: &spec.priority) { return bad(refusal) }
            switch fields["sha256"] {
            case nil, .null?: break
            case .string(let hex)? where sha256(hex) != nil: spec.sha256 = sha256(hex)
            default: return bad("\"sha256\" must be 64 hex digits")
            }
            switch fields["refreshEvery"] {
            case nil, .null?: break
            case .number(let seconds)? where seconds == seconds.rounded()
                && (Double(RefreshInterval.minimumSeconds)...Double(RefreshInterval.maximumSeconds)).contains(seconds):
                spec.refreshSeconds = Int64(seconds)
            default: return bad("\"refreshEvery\" must be a number of seconds from 1 to \(RefreshInterval.maximumSeconds)")
            }
            switch readConstraints(fields["constraints"]) {
            case .success(let constraints): spec.constraints = constraints
            case .failure(let refusal): return bad(refusal.message)
            }
            if let refusal = readProxy(fields, into: &spec.proxy) ?? readRate(fields, into: &spec.maxRate) { return bad(refusal) }
            request.download = spec
        case .upload:
            guard case .string(let url)? = fields["url"] else { return bad("upload needs \"url\" as a string") }
            guard case .string(let file)? = fields["file"] else { return bad("upload needs \"file\" as a string (an absolute path)") }
            var spec = UploadSpec(file: file, url: url)
            switch fields["method"] {
            case nil, .null?: break
            case .string(let name)? where UploadMethod(rawValue: name.uppercased()) != nil: spec.method = UploadMethod(rawValue: name.uppercased())!
            default: return bad("\"method\" must be PUT or POST")
            }
            switch fields["fields"] {
            case nil, .null?: break
            case .array(let items)?:
                for item in items {
                    guard case .object(let pair) = item, case .string(let name)? = pair["name"], case .string(let value)? = pair["value"], !name.isEmpty else {
                        return bad("\"fields\" must be an array of {\"name\": …, \"value\": …} with strings")
                    }
                    spec.fields.append(FormField(name: name, value: value))
                }
            default: return bad("\"fields\" must be an array of {\"name\": …, \"value\": …} with strings")
            }
            switch fields["fileField"] {
            case nil, .null?: break
            case .string(let name)? where !name.isEmpty: spec.fileField = name
            default: return bad("\"fileField\" must be a non-empty string")
            }
            if let refusal = readCommon(fields, allowMetered: &spec.allowMetered, allowInsecureAuth: &spec.allowInsecureAuth,
                                        priority: &spec.priority) { return bad(refusal) }
            switch readConstraints(fields["constraints"]) {
            case .success(let constraints): spec.constraints = constraints
            case .failure(let refusal): return bad(refusal.message)
            }
            if let refusal = readProxy(fields, into: &spec.proxy) ?? readRate(fields, into: &spec.maxRate) { return bad(refusal) }
            request.upload = spec
        case .fetch:
            guard case .string(let url)? = fields["url"] else { return bad("fetch needs \"url\" as a string") }
            request.fetch = url
            if let refusal = readProxy(fields, into: &request.fetchProxy) { return bad(refusal) }
        case .list, .clean, .watch, .ping: break
        }
        return .success(request)
    }
}

extension Character {
    /// 0-9, a-f, A-F only (`isHexDigit` also accepts fullwidth forms).
    var isASCIIHexDigit: Bool { isASCII && isHexDigit }
}

/// A message from the transfer service: one JSON object per line, with `version` and `type`.
public enum TransferReply: Sendable, Hashable {
    /// Answer to add, show, pause, resume, cancel: the job after the operation.
    case job(id: RequestID?, job: Job)
    /// Answer to list and watch: the caller's jobs (root: all); `watch` is followed by `event` lines. `notice`: what
    /// the service says of itself beside them (its job table cannot be written, or was set aside).
    case jobs(id: RequestID?, jobs: [Job], notice: String? = nil)
    /// A job changed (state, progress at most a few times a second), to watchers.
    case event(job: Job)
    /// Answer to fetch: where the body is, where it came from.
    case fetched(id: RequestID?, result: FetchResult)
    case pong(id: RequestID?)
    case error(ProtocolError)

    public var type: String {
        switch self {
        case .job: "job"
        case .jobs: "jobs"
        case .event: "event"
        case .fetched: "fetched"
        case .pong: "pong"
        case .error: "error"
        }
    }

    /// The reply as one line: compact JSON (keys sorted) and `\n`.
    public func encodedLine() -> [UInt8] { encodeJSONLine(self) }

    /// Decodes one line from the service.
    public static func decode(line: [UInt8]) throws -> TransferReply {
        try JSONDecoder().decode(TransferReply.self, from: Data(line))
    }
}

extension TransferReply: Codable {
    private enum CodingKeys: String, ReplyEnvelopeKey {
        case version, type, id, job, jobs, notice, error, result
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(protocolVersion, forKey: .version)
        try c.encode(type, forKey: .type)
        switch self {
        case .job(let id, let job):
            try c.encodeIfPresent(id, forKey: .id)
            try c.encode(job, forKey: .job)
        case .jobs(let id, let jobs, let notice):
            try c.encodeIfPresent(id, forKey: .id)
            try c.encode(jobs, forKey: .jobs)
            try c.encodeIfPresent(notice, forKey: .notice)
        case .event(let job):
            try c.encode(job, forKey: .job)
        case .fetched(let id, let result):
            try c.encodeIfPresent(id, forKey: .id)
            try c.encode(result, forKey: .result)
        case .pong(let id):
            try c.encodeIfPresent(id, forKey: .id)
        case .error(let error):
            try c.encodeIfPresent(error.id, forKey: .id)
            try c.encode(ReplyEnvelope<CodingKeys>.ErrorBody(code: error.code, message: error.message), forKey: .error)
        }
    }

    public init(from decoder: any Decoder) throws {
        let envelope = try ReplyEnvelope<CodingKeys>(decoder)
        let c = envelope.container, id = envelope.id
        switch envelope.type {
        case "job": self = .job(id: id, job: try c.decode(Job.self, forKey: .job))
        case "jobs": self = .jobs(id: id, jobs: try c.decode([Job].self, forKey: .jobs), notice: try c.decodeIfPresent(String.self, forKey: .notice))
        case "event": self = .event(job: try c.decode(Job.self, forKey: .job))
        case "fetched": self = .fetched(id: id, result: try c.decode(FetchResult.self, forKey: .result))
        case "pong": self = .pong(id: id)
        case "error": self = .error(try envelope.error())
        default: throw envelope.unknownType
        }
    }
}

extension FetchResult {
    /// The result as one compact JSON object (keys sorted).
    public var json: String { String(decoding: encodeJSONLine(self).dropLast(), as: UTF8.self) }
}

extension Job {
    /// The job as one compact JSON object (keys sorted), as on the wire.
    public var json: String { String(decoding: encodeJSONLine(self).dropLast(), as: UTF8.self) }
}

/// `[Job]` as one compact JSON array.
public func jobsJSON(_ jobs: [Job]) -> String { String(decoding: encodeJSONLine(jobs).dropLast(), as: UTF8.self) }
