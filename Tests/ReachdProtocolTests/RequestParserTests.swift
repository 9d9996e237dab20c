import ReachdModel
import ReachdProtocol
import XCTest

final class RequestParserTests: XCTestCase {
    private func parse(_ text: String) -> Result<Request, ProtocolError> {
        RequestParser.parse(Array(text.utf8))
    }

    func testValidRequests() throws {
        XCTAssertEqual(try parse(#"{"op":"status"}"#).get(), Request(op: .status))
        XCTAssertEqual(try parse(#"{"op":"subscribe","id":7,"target":"internet"}"#).get(), Request(op: .subscribe, id: .number(7)))
        XCTAssertEqual(try parse(#"{"op":"status","host":"mirror.test"}"#).get(), Request(op: .status, hosts: ["mirror.test"]))
        XCTAssertEqual(try parse(#"{"op":"subscribe","hosts":["a.test","2001:db8::1","192.0.2.9"]}"#).get(),
                       Request(op: .subscribe, hosts: ["a.test", "2001:db8::1", "192.0.2.9"]))
        XCTAssertEqual(try parse(#" {"id":"x","op":"ping","extra":[1,{"a":null}]} "#).get(), Request(op: .ping, id: .string("x")))
    }

    func testBadInputGetsCodes() {
        let table: [(String, ProtocolError.Code, RequestID?)] = [
            ("not json", .badJSON, nil),
            ("{\"op\":", .badJSON, nil),
            ("\u{FF}", .badJSON, nil),
            ("[1,2]", .badRequest, nil),
            ("\"status\"", .badRequest, nil),
            ("{}", .badRequest, nil),
            (#"{"op":5,"id":1}"#, .badRequest, .number(1)),
            (#"{"op":"status","id":1.5}"#, .badRequest, nil),
            (#"{"op":"status","id":[1]}"#, .badRequest, nil),
            (#"{"op":"reboot","id":"r"}"#, .unknownOp, .string("r")),
            (#"{"op":"status","target":"example.org","id":2}"#, .badRequest, .number(2)),
            (#"{"op":"status","target":3}"#, .badRequest, nil),
            (#"{"op":"status","host":"bad name"}"#, .badRequest, nil),
            (#"{"op":"status","host":""}"#, .badRequest, nil),
            (#"{"op":"status","hosts":["a","b"]}"#, .badRequest, nil),
            (#"{"op":"subscribe","hosts":[]}"#, .badRequest, nil),
            (#"{"op":"subscribe","hosts":[1]}"#, .badRequest, nil),
            (#"{"op":"subscribe","host":"a","hosts":["b"]}"#, .badRequest, nil),
            (#"{"op":"status","host":"\#(String(repeating: "a", count: 254))"}"#, .badRequest, nil),
        ]
        for (line, code, id) in table {
            guard case .failure(let error) = parse(line) else {
                XCTFail("\(line) was accepted")
                continue
            }
            XCTAssertEqual(error.code, code, line)
            XCTAssertEqual(error.id, id, line)
            XCTAssertFalse(error.message.isEmpty)
        }
    }

    func testRepliesRoundTripAndCarryTheVersion() throws {
        let verdict = StampedVerdict(
            verdict: InternetVerdict().verdict(for: NetworkSnapshot()),
            sequence: 4,
            timestamp: Timestamp(microseconds: 1_795_319_522_000_000)
        )
        let replies: [Reply] = [
            .status(id: .number(1), verdict: verdict),
            .subscribed(id: nil, verdicts: [verdict, verdict]),
            .event(verdict: verdict),
            .pong(id: .string("p")),
            .error(ProtocolError(.unknownOp, "nope", id: .number(3))),
        ]
        for reply in replies {
            let line = reply.encodedLine()
            XCTAssertEqual(line.last, UInt8(ascii: "\n"))
            XCTAssertFalse(line.dropLast().contains(UInt8(ascii: "\n")), "one line per message")
            let text = String(decoding: line, as: UTF8.self)
            XCTAssertTrue(text.contains("\"version\":1"), text)
            XCTAssertEqual(try Reply.decode(line: Array(line.dropLast())), reply)
        }
        let event = String(decoding: Reply.event(verdict: verdict).encodedLine(), as: UTF8.self)
        for field in ["\"target\":\"internet\"", "\"reachable\":false", "\"status\":\"unreachable\"", "\"metered\":false",
                      "\"interface\":null", "\"flags\":[]", "\"sequence\":4", "\"timestamp\":\"2026-11-22T03:52:02.000000Z\""] {
            XCTAssertTrue(event.contains(field), "\(field) missing in \(event)")
        }
    }

    func testSocketPathDefaults() {
        XCTAssertEqual(SocketPath.defaultPath(uid: 0, environment: [:]), "/run/reachd/reachd.sock")
        XCTAssertEqual(SocketPath.defaultPath(uid: 1000, environment: ["XDG_RUNTIME_DIR": "/run/user/1000"]), "/run/user/1000/reachd.sock")
        XCTAssertNil(SocketPath.defaultPath(uid: 1000, environment: [:]))
        XCTAssertNil(SocketPath.defaultPath(uid: 1000, environment: ["XDG_RUNTIME_DIR": "relative"]))
        XCTAssertEqual(SocketPath.clientPath(explicit: "/x", uid: 0, environment: ["REACHD_SOCKET": "/y"], exists: { _ in true }), "/x")
        XCTAssertEqual(SocketPath.clientPath(explicit: nil, uid: 1000, environment: ["REACHD_SOCKET": "/y"], exists: { _ in true }), "/y")
        XCTAssertEqual(SocketPath.clientPath(explicit: nil, uid: 1000, environment: [:], exists: { _ in true }), "/run/reachd/reachd.sock")
        XCTAssertEqual(SocketPath.clientPath(explicit: nil, uid: 1000, environment: ["XDG_RUNTIME_DIR": "/r"], exists: { _ in false }), "/r/reachd.sock")
        XCTAssertEqual(TransferSocketPath.defaultPath(system: true, environment: ["XDG_RUNTIME_DIR": "/r"]), "/run/reachd/transfers.sock")
        XCTAssertNil(TransferSocketPath.defaultPath(system: false, environment: [:]))
        XCTAssertEqual(TransferSocketPath.clientPath(explicit: nil, system: true, environment: ["REACHD_TRANSFERS_SOCKET": "/t", "REACHD_SOCKET": "/y"]), "/t")
        XCTAssertEqual(TransferSocketPath.clientPath(explicit: "/x", system: false, environment: ["REACHD_TRANSFERS_SOCKET": "/t"]), "/x")
        XCTAssertEqual(TransferSocketPath.clientPath(explicit: nil, system: false, environment: ["XDG_RUNTIME_DIR": "/r/"]), "/r/reachd-transfers.sock",
                       "a user's own instance, even where the system instance's socket exists")
        XCTAssertEqual(TransferSocketPath.clientPath(explicit: nil, system: true, environment: ["XDG_RUNTIME_DIR": "/r/"]), "/run/reachd/transfers.sock")
        XCTAssertEqual(TransferSocketPath.stateDirectory(system: true, environment: ["HOME": "/home/u"]), "/var/lib/reachd-transfers")
        XCTAssertEqual(TransferSocketPath.stateDirectory(system: true, environment: ["STATE_DIRECTORY": "/var/lib/x:/var/lib/y"]), "/var/lib/x")
        XCTAssertEqual(TransferSocketPath.cacheDirectory(system: false, environment: ["CACHE_DIRECTORY": "/var/cache/x", "HOME": "/home/u"]),
                       "/var/cache/x")
        XCTAssertEqual(TransferSocketPath.cacheDirectory(system: true, environment: ["CACHE_DIRECTORY": "relative"]), "/var/cache/reachd-transfers")
        XCTAssertEqual(TransferSocketPath.stateDirectory(system: false, environment: ["HOME": "/home/u"]), "/home/u/.local/state/reachd")
        XCTAssertEqual(TransferSocketPath.cacheDirectory(system: false, environment: ["XDG_CACHE_HOME": "/c", "HOME": "/home/u"]), "/c/reachd")
        XCTAssertEqual(TransferSocketPath.cacheDirectory(system: false, environment: ["HOME": "/home/u"]), "/home/u/.cache/reachd")
        XCTAssertNil(TransferSocketPath.cacheDirectory(system: false, environment: ["XDG_CACHE_HOME": "relative"]))
    }
}
