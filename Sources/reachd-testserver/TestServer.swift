import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Static file server with per-request fault injection, for the transfer tests and the benchmark.
@main
struct TestServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reachd-testserver",
        abstract: "Serve files over HTTP/1.1 with fault injection chosen by query parameters."
    )

    @Option(help: "Directory to serve.")
    var root: String

    @Option(help: "TCP port; 0 picks a free one.")
    var port: Int

    @Option(help: "Address to bind (0.0.0.0, ::, ...).")
    var host = "0.0.0.0"

    @Option(help: "Append one JSON line per completed request to this file.")
    var log: String?

    func run() async throws {
        let state = try ServerState(logPath: log)
        let root = root
        let fileIO = NonBlockingFileIO(threadPool: .singleton)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(FileServerHandler(root: root, state: state, fileIO: fileIO))
                }
            }
            .bind(host: host, port: port).get()
        print("listening \(channel.localAddress?.port ?? port)")
        fflush(nil)
        try await channel.closeFuture.get()
    }
}

/// What one request asked for and how it was answered: one line of the log and of `/__requests`.
struct RequestRecord {
    let method: String
    let path: String
    let query: String
    let range: String?
    let ifRange: String?
    let ifNoneMatch: String?
    let ifModifiedSince: String?
    /// The `Authorization` header as sent: tests check where credentials went.
    let authorization: String?
    var status = 0
    var bodyBytes: Int64 = 0

    init(head: HTTPRequestHead, path: String, query: String) {
        method = head.method.rawValue
        self.path = path
        self.query = query
        range = head.headers.first(name: "range")
        ifRange = head.headers.first(name: "if-range")
        ifNoneMatch = head.headers.first(name: "if-none-match")
        ifModifiedSince = head.headers.first(name: "if-modified-since")
        authorization = head.headers.first(name: "authorization")
    }

    /// Compact JSON with sorted keys.
    func json(completed: Bool) -> String {
        let fields: [(String, String)] = [
            ("authorization", Self.quote(authorization)), ("bodyBytes", String(bodyBytes)), ("completed", String(completed)),
            ("ifModifiedSince", Self.quote(ifModifiedSince)), ("ifNoneMatch", Self.quote(ifNoneMatch)),
            ("ifRange", Self.quote(ifRange)), ("method", Self.quote(method)), ("path", Self.quote(path)),
            ("query", Self.quote(query)), ("range", Self.quote(range)), ("status", String(status)),
        ]
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    private static func quote(_ value: String?) -> String {
        guard let value else { return "null" }
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// Per-key request counters and the request list, shared by all connections.
final class ServerState: Sendable {
    private struct Store {
        var counts: [String: Int] = [:]
        var records: [String] = []
    }

    private let store = Mutex(Store())
    private let logFD: CInt?

    init(logPath: String?) throws {
        guard let logPath else {
            logFD = nil
            return
        }
        let fd = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ValidationError("cannot open log file \(logPath)") }
        logFD = fd
    }

    /// Counts one more request with `key` and returns its number, starting at 1.
    func nextCount(for key: String) -> Int {
        store.withLock { store in
            store.counts[key, default: 0] += 1
            return store.counts[key]!
        }
    }

    /// Keeps a finished request's JSON line and appends it to the log file.
    func add(_ line: String) {
        store.withLock { store in
            store.records.append(line)
            guard let logFD else { return }
            let bytes = Array((line + "\n").utf8)
            _ = bytes.withUnsafeBytes { write(logFD, $0.baseAddress, $0.count) }
        }
    }

    /// All requests so far as a JSON array.
    func recordsJSON() -> String {
        store.withLock { "[" + $0.records.joined(separator: ",") + "]" }
    }

    func reset() {
        store.withLock { $0 = Store() }
    }
}
