import ReachdModel
import ReachdProtocol
import ReachdTransferModel
import ReachdTransferProtocol
import XCTest

final class TransferMessagesTests: XCTestCase {
    private func parse(_ text: String) -> Result<TransferRequest, ProtocolError> {
        TransferRequestParser.parse(Array(text.utf8))
    }

    private let sha = String(repeating: "0123456789abcdef", count: 4)

    private func job(_ id: String = "00000000000000a1", uid: UInt32 = 1000) -> Job {
        Job(id: id, sequence: 9, spec: DownloadSpec(url: "https://mirror.test/pub/x.iso?a=1&b=2", output: "/home/u/x.iso"),
            owner: Owner(uid: uid, gid: 0), created: Timestamp(microseconds: 1_795_319_522_000_000))
    }

    private func busyJob() -> Job {
        var busy = job("ffffffffffffffff", uid: 0)
        busy.state = .deferred
        busy.priority = .high
        busy.allowMetered = true
        busy.changeDownload { $0.sha256 = sha }
        busy.bytesMoved = 1 << 40
        busy.bytesTotal = 1 << 41
        busy.reason = "deferred: route to mirror.test is metered (wwan0), size unknown; \"waits\" \\ é\n"
        busy.changeDownload { $0.partial = Validators(etag: "W/\"x\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT") }
        busy.attempts = 3
        busy.retryAt = Timestamp(microseconds: 1_795_319_530_123_456)
        busy.updated = Timestamp(microseconds: 1_795_319_529_000_001)
        return busy
    }

    // MARK: Parser

    func testParserRefusals() {
        let known = "add, upload, fetch, list, show, pause, resume, cancel, refresh, remove, clean, watch, ping, limit"
        let add = #""op":"add","url":"http://h/x","output":"/x""#
        let table: [(String, ProtocolError.Code, String, RequestID?, Int)] = [
            ("not json", .badJSON, "the line is not valid JSON", nil, #line),
            (#"{"op":"list""#, .badJSON, "the line is not valid JSON", nil, #line),
            ("", .badJSON, "the line is not valid JSON", nil, #line),
            ("[1]", .badRequest, "a request must be a JSON object", nil, #line),
            (#""list""#, .badRequest, "a request must be a JSON object", nil, #line),
            ("null", .badRequest, "a request must be a JSON object", nil, #line),
            (#"{"op":"list","id":1.5}"#, .badRequest, #""id" must be an integer or a string"#, nil, #line),
            ("{\(add),\"proxy\":\"https://u:pw@p\"}", .badRequest, #""proxy": invalid proxy URL: TLS to the proxy itself (https://) is not supported; https origins go through an http:// proxy with CONNECT"#, nil, #line),
            ("{\(add),\"proxy\":7}", .badRequest, #""proxy" must be "none" or a proxy URL"#, nil, #line),
            ("{\(add),\"maxRate\":1000}", .badRequest, #""maxRate" must be a number of bytes per second from 1024 to 1099511627776, or null"#, nil, #line),
            (#"{"op":"limit","job":"ab"}"#, .badRequest, #"limit needs "maxRate" (bytes per second, or null: none of its own)"#, nil, #line),
            (#"{"op":"limit","maxRate":4096}"#, .badRequest, #"limit needs "job""#, nil, #line),
            (#"{"op":"limit","job":"ab","maxRate":"2M"}"#, .badRequest, #""maxRate" must be a number of bytes per second from 1024 to 1099511627776, or null"#, nil, #line),
            (#"{"op":"fetch","url":"http://h/x","proxy":"socks4://p"}"#, .badRequest, #""proxy": invalid proxy URL: SOCKS4 is not supported; use socks5:// or socks5h://"#, nil, #line),
            (#"{"op":"list","id":true}"#, .badRequest, #""id" must be an integer or a string"#, nil, #line),
            (#"{"op":"list","id":{}}"#, .badRequest, #""id" must be an integer or a string"#, nil, #line),
            (#"{"op":"list","id":1e16}"#, .badRequest, #""id" must be an integer or a string"#, nil, #line),
            (#"{"id":3}"#, .badRequest, #"a request needs "op" as a string"#, .number(3), #line),
            (#"{"op":7,"id":"s"}"#, .badRequest, #"a request needs "op" as a string"#, .string("s"), #line),
            (#"{"op":"reboot","id":4}"#, .unknownOp, #"unknown op "reboot"; known: "# + known, .number(4), #line),
            (#"{"op":"LIST"}"#, .unknownOp, #"unknown op "LIST"; known: "# + known, nil, #line),
            (#"{"op":"show","id":5}"#, .badRequest, #"show needs "job""#, .number(5), #line),
            (#"{"op":"pause","job":null}"#, .badRequest, #"pause needs "job""#, nil, #line),
            (#"{"op":"refresh"}"#, .badRequest, #"refresh needs "job""#, nil, #line),
            (#"{"op":"remove"}"#, .badRequest, #"remove needs "job""#, nil, #line),
            (#"{"op":"fetch"}"#, .badRequest, #"fetch needs "url" as a string"#, nil, #line),
            (#"{"op":"upload","url":"http://h/"}"#, .badRequest, #"upload needs "file" as a string (an absolute path)"#, nil, #line),
            (#"{"op":"upload","file":"/f","url":"http://h/","method":"PATCH"}"#, .badRequest, #""method" must be PUT or POST"#, nil, #line),
            (#"{"op":"upload","file":"/f","url":"http://h/","fields":[{"name":"a"}]}"#, .badRequest,
             #""fields" must be an array of {"name": …, "value": …} with strings"#, nil, #line),
            (#"{"op":"add","url":"http://h/","output":"/x","refreshEvery":0}"#, .badRequest,
             #""refreshEvery" must be a number of seconds from 1 to 31536000"#, nil, #line),
            (#"{"op":"add","url":"http://h/","output":"/x","refreshEvery":"6h"}"#, .badRequest,
             #""refreshEvery" must be a number of seconds from 1 to 31536000"#, nil, #line),
            (#"{"op":"resume"}"#, .badRequest, #"resume needs "job""#, nil, #line),
            (#"{"op":"cancel"}"#, .badRequest, #"cancel needs "job""#, nil, #line),
            (#"{"op":"show","job":"xyz","id":6}"#, .badRequest, #""job" must be a job id (hex digits)"#, .number(6), #line),
            (#"{"op":"show","job":""}"#, .badRequest, #""job" must be a job id (hex digits)"#, nil, #line),
            (#"{"op":"show","job":12}"#, .badRequest, #""job" must be a job id (hex digits)"#, nil, #line),
            (#"{"op":"show","job":"\#(String(repeating: "a", count: 65))"}"#, .badRequest, #""job" must be a job id (hex digits)"#, nil, #line),
            (#"{"op":"watch","job":"0x12"}"#, .badRequest, #""job" must be a job id (hex digits)"#, nil, #line),
            (#"{"op":"show","job":"１２"}"#, .badRequest, #""job" must be a job id (hex digits)"#, nil, #line),
            (#"{"op":"add","url":"http://h/","output":"/x","sha256":"\#(String(repeating: "ａ", count: 64))"}"#, .badRequest,
             #""sha256" must be 64 hex digits"#, nil, #line),
            (#"{"op":"add","output":"/x","id":"a"}"#, .badRequest, #"add needs "url" as a string"#, .string("a"), #line),
            (#"{"op":"add","url":5,"output":"/x"}"#, .badRequest, #"add needs "url" as a string"#, nil, #line),
            (#"{"op":"add","url":"http://h/"}"#, .badRequest, #"add needs "output" as a string (an absolute path)"#, nil, #line),
            (#"{"op":"add","url":"http://h/","output":["/x"]}"#, .badRequest, #"add needs "output" as a string (an absolute path)"#, nil, #line),
            ("{\(add),\"allowMetered\":\"yes\"}", .badRequest, #""allowMetered" must be true or false"#, nil, #line),
            ("{\(add),\"allowMetered\":1}", .badRequest, #""allowMetered" must be true or false"#, nil, #line),
            ("{\(add),\"priority\":\"urgent\"}", .badRequest, #""priority" must be low, normal or high"#, nil, #line),
            ("{\(add),\"priority\":\"HIGH\"}", .badRequest, #""priority" must be low, normal or high"#, nil, #line),
            ("{\(add),\"priority\":2}", .badRequest, #""priority" must be low, normal or high"#, nil, #line),
            ("{\(add),\"sha256\":\"abc\"}", .badRequest, #""sha256" must be 64 hex digits"#, nil, #line),
            ("{\(add),\"sha256\":\"\(sha)0\"}", .badRequest, #""sha256" must be 64 hex digits"#, nil, #line),
            ("{\(add),\"sha256\":\"\(sha.dropLast())g\"}", .badRequest, #""sha256" must be 64 hex digits"#, nil, #line),
            ("{\(add),\"sha256\":true}", .badRequest, #""sha256" must be 64 hex digits"#, nil, #line),
        ]
        for (line, code, message, id, source) in table {
            XCTAssertEqual(parse(line), .failure(ProtocolError(code, message, id: id)), line, line: UInt(source))
        }
    }

    func testParserAccepts() throws {
        let upper = sha.uppercased()
        let table: [(String, TransferRequest, Int)] = [
            (#"{"op":"list"}"#, TransferRequest(op: .list), #line),
            (#"{"op":"ping","id":-7}"#, TransferRequest(op: .ping, id: .number(-7)), #line),
            (#"{"op":"ping","id":2.0}"#, TransferRequest(op: .ping, id: .number(2)), #line),
            (#"{"op":"ping","id":null,"extra":[1]}"#, TransferRequest(op: .ping), #line),
            (#"{"op":"watch"}"#, TransferRequest(op: .watch), #line),
            (#"{"op":"watch","job":"ab12"}"#, TransferRequest(op: .watch, job: "ab12"), #line),
            (#"{"op":"show","job":"00000000000000a1","id":"x"}"#, TransferRequest(op: .show, id: .string("x"), job: "00000000000000a1"), #line),
            (#"{"op":"pause","job":"1"}"#, TransferRequest(op: .pause, job: "1"), #line),
            (#"{"op":"resume","job":"f"}"#, TransferRequest(op: .resume, job: "f"), #line),
            (#"{"op":"cancel","job":"\#(String(repeating: "a", count: 64))"}"#,
             TransferRequest(op: .cancel, job: String(repeating: "a", count: 64)), #line),
            (#"{"op":"add","url":"http://h/x","output":"/x"}"#,
             TransferRequest(op: .add, download: DownloadSpec(url: "http://h/x", output: "/x")), #line),
            (#"{"op":"add","url":"not checked here","output":"rel","allowMetered":null,"priority":null,"sha256":null}"#,
             TransferRequest(op: .add, download: DownloadSpec(url: "not checked here", output: "rel")), #line),
            (#"{"op":"add","id":1,"url":"https://h/x","output":"/x","allowMetered":true,"priority":"low","sha256":"\#(upper)"}"#,
             TransferRequest(op: .add, id: .number(1),
                             download: DownloadSpec(url: "https://h/x", output: "/x", allowMetered: true, priority: .low, sha256: sha)), #line),
        ]
        for (line, expected, source) in table {
            XCTAssertEqual(try parse(line).get(), expected, line, line: UInt(source))
        }
    }

    func testRequestEncodedLineRoundTrips() throws {
        let requests = [
            TransferRequest(op: .list),
            TransferRequest(op: .ping, id: .string("p\"\n")),
            TransferRequest(op: .watch, id: .number(123_456_789), job: "abc"),
            TransferRequest(op: .cancel, id: .number(-1), job: "0123456789abcdef"),
            TransferRequest(op: .add, download: DownloadSpec(url: "http://h/a b", output: "/x")),
            TransferRequest(op: .add, id: .number(2), download: DownloadSpec(
                url: "https://mirror.test/x?y=1", output: "/home/u/é.iso", allowMetered: true, priority: .high, sha256: sha)),
            TransferRequest(op: .upload, id: .number(3), upload: UploadSpec(
                file: "/srv/ü.bin", url: "https://up.test/x", method: .post, fields: [FormField(name: "a", value: "\"b\"\r\n")],
                fileField: "payload", allowMetered: true, priority: .low, allowInsecureAuth: true)),
            TransferRequest(op: .fetch, id: .number(4), fetch: "http://m.test/a?b=\"c\""),
            TransferRequest(op: .fetch, fetch: "http://m.test/", fetchProxy: "none"),
            { var limit = TransferRequest(op: .limit, job: "ab"); limit.maxRate = 512_000; return limit }(),
            TransferRequest(op: .limit, job: "ab"),
            { var spec = DownloadSpec(url: "http://h/x", output: "/x"); spec.maxRate = 2 << 20
              return TransferRequest(op: .add, download: spec) }(),
            { var spec = DownloadSpec(url: "http://h/x", output: "/x"); spec.proxy = "http://u:p%40ss@proxy:3128"
              return TransferRequest(op: .add, download: spec) }(),
            { var spec = UploadSpec(file: "/f", url: "http://h/x"); spec.proxy = "socks5h://gate:1080"
              return TransferRequest(op: .upload, upload: spec) }(),
        ] + TransferRequest.Operation.allCases.filter { ![.add, .upload, .fetch].contains($0) }.map { TransferRequest(op: $0, job: "f00") }
        for request in requests {
            let line = request.encodedLine()
            XCTAssertEqual(line.last, UInt8(ascii: "\n"))
            XCTAssertEqual(line.filter { $0 == 10 }.count, 1)
            XCTAssertEqual(try parse(String(decoding: line, as: UTF8.self)).get(), request)
        }
        XCTAssertEqual(String(decoding: TransferRequest(op: .add, id: .number(1), download: DownloadSpec(url: "http://h/x", output: "/x"))
            .encodedLine(), as: UTF8.self),
            #"{"allowMetered":false,"id":1,"op":"add","output":"/x","priority":"normal","url":"http://h/x"}"# + "\n")
    }

    // MARK: Replies

    func testRepliesRoundTrip() throws {
        let replies: [TransferReply] = [
            .job(id: .number(1), job: job()),
            .job(id: nil, job: busyJob()),
            .jobs(id: .string("l"), jobs: [job(), busyJob()]),
            .jobs(id: nil, jobs: []),
            .jobs(id: .number(3), jobs: [job()], notice: "the job table cannot be written"),
            .event(job: busyJob()),
            .pong(id: .number(-3)),
            .pong(id: nil),
            .error(ProtocolError(.notFound, "no job \"ab\"", id: .string("q"))),
            .error(ProtocolError(.internalError, "disk full", id: nil)),
        ]
        let types = ["job", "job", "jobs", "jobs", "jobs", "event", "pong", "pong", "error", "error"]
        for (reply, type) in zip(replies, types) {
            XCTAssertEqual(reply.type, type)
            let line = reply.encodedLine()
            XCTAssertEqual(line.filter { $0 == 10 }.count, 1, "one line")
            XCTAssertEqual(line.last, 10)
            let text = String(decoding: line, as: UTF8.self)
            XCTAssertTrue(text.hasPrefix("{") && text.contains(#""type":"\#(type)""#) && text.contains(#""version":1"#), text)
            XCTAssertEqual(try TransferReply.decode(line: Array(line.dropLast())), reply, text)
        }
        XCTAssertEqual(String(decoding: TransferReply.pong(id: .number(5)).encodedLine(), as: UTF8.self),
                       #"{"id":5,"type":"pong","version":1}"# + "\n")
        XCTAssertEqual(String(decoding: TransferReply.error(ProtocolError(.conflict, "done", id: nil)).encodedLine(), as: UTF8.self),
                       #"{"error":{"code":"conflict","message":"done"},"type":"error","version":1}"# + "\n")
    }

    func testUndecodableReplies() {
        let encoded = job().json
        let table = [
            #"{"version":1,"type":"status"}"#,
            #"{"version":2,"type":"pong"}"#,
            #"{"version":0,"type":"job","job":\#(encoded)}"#,
            #"{"type":"pong"}"#,
            #"{"version":"1","type":"pong"}"#,
            #"{"version":1}"#,
            #"{"version":1,"type":"job"}"#,
            #"{"version":1,"type":"jobs","jobs":{}}"#,
            #"{"version":1,"type":"error","error":{"code":"nope","message":"x"}}"#,
            #"{"version":1,"type":"error"}"#,
            #"{"version":1,"type":"pong","id":1.5}"#,
            "[]",
            "",
        ]
        for line in table {
            XCTAssertThrowsError(try TransferReply.decode(line: Array(line.utf8)), line)
        }
        XCTAssertEqual(try TransferReply.decode(line: Array(#"{"version":1,"type":"event","job":\#(encoded),"extra":0}"#.utf8)),
                       .event(job: job()))
    }

    func testJobJSON() {
        XCTAssertEqual(job().json, #"{"allowInsecureAuth":false,"allowMetered":false,"attempts":0,"bytesReceived":0,"bytesTotal":null,"#
            + #""created":"2026-11-22T03:52:02.000000Z","etag":null,"id":"00000000000000a1","kind":"download","lastChecked":null,"lastModified":null,"#
            + #""nextCheck":null,"output":"/home/u/x.iso","priority":"normal","reason":null,"refreshEvery":null,"retryAt":null,"sequence":9,"sha256":null,"#
            + #""state":"queued","uid":1000,"updated":"2026-11-22T03:52:02.000000Z","#
            + #""url":"https://mirror.test/pub/x.iso?a=1&b=2"}"#)
        let busy = busyJob().json
        for field in [#""bytesTotal":2199023255552"#, #""etag":"W/\"x\"""#, #""retryAt":"2026-11-22T03:52:10.123456Z""#,
                      #""reason":"deferred: route to mirror.test is metered (wwan0), size unknown; \"waits\" \\ é\n""#,
                      #""state":"deferred""#, #""priority":"high""#, #""uid":0"#, #""sha256":"\#(sha)""#] {
            XCTAssertTrue(busy.contains(field), "\(field) missing in \(busy)")
        }
        XCTAssertFalse(busy.contains("\n"))
        XCTAssertEqual(jobsJSON([]), "[]")
        XCTAssertEqual(jobsJSON([job(), busyJob()]), "[\(job().json),\(busy)]")
    }
}
