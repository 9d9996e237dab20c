import ReachdModel
import ReachdProtocol
import ReachdTransferModel
import ReachdTransferProtocol
import XCTest

/// Jobs' constraints on the socket: `add` and `upload` take them checked, requests and jobs carry them both ways.
final class TransferConstraintsTests: XCTestCase {
    private func parse(_ text: String) -> Result<TransferRequest, ProtocolError> {
        TransferRequestParser.parse(Array(text.utf8))
    }

    private var asked: JobConstraints {
        var constraints = JobConstraints()
        for (key, value) in [("network", "not-roaming,within-budget"), ("power", "on-ac-power"), ("window", "22:00-06:00"),
                             ("notBefore", "2026-11-27T00:00:00Z"), ("deadline", "2026-11-28T00:00:00Z"), ("afterDeadline", "fail"),
                             ("storageNotLow", "true")] {
            XCTAssertNil(constraints.set(key, to: value))
        }
        return constraints
    }

    func testAddAndUploadTakeConstraints() throws {
        let add = try parse(#"{"op":"add","url":"http://h/x","output":"/x","constraints":{"network":["not-roaming","within-budget"],"power":"on-ac-power","#
            + #""window":"22:00-06:00","notBefore":"2026-11-27T00:00:00Z","deadline":"2026-11-28T00:00:00Z","afterDeadline":"fail","storageNotLow":true,"now":null}}"#).get()
        XCTAssertEqual(add.download?.constraints, asked)
        let upload = try parse(#"{"op":"upload","url":"http://h/x","file":"/x","constraints":{"now":true}}"#).get()
        XCTAssertEqual(upload.upload?.constraints.now, true)
        XCTAssertEqual(try parse(#"{"op":"add","url":"http://h/x","output":"/x","constraints":{}}"#).get().download?.constraints, JobConstraints())
    }

    func testBadConstraintsAreRefusedNamingTheField() {
        let table: [(String, String)] = [
            (#""constraints":[1]"#, "\"constraints\" must be an object"),
            (#""constraints":{"network":["cheap"]}"#, "\"network\" must list"),
            (#""constraints":{"network":[1]}"#, "must list strings"),
            (#""constraints":{"window":"1-6"}"#, "HH:MM-HH:MM"),
            (#""constraints":{"now":"yes"}"#, "\"now\" must be true or false"),
            (#""constraints":{"notBefore":12}"#, "wrong type"),
            (#""constraints":{"colour":"red"}"#, "unknown constraint \"colour\""),
            (#""constraints":{"network":["any","any","any","any","any","any","any","any","any"]}"#, "wrong type"),
        ]
        for (member, message) in table {
            guard case .failure(let error) = parse(#"{"op":"add","url":"http://h/x","output":"/x",\#(member)}"#) else {
                XCTFail("accepted \(member)")
                continue
            }
            XCTAssertEqual(error.code, .badRequest, member)
            XCTAssertTrue(error.message.contains(message), "\(member): \(error.message)")
        }
    }

    func testRequestsAndJobsCarryTheirConstraints() throws {
        var spec = DownloadSpec(url: "http://h/x", output: "/x")
        spec.constraints = asked
        let request = TransferRequest(op: .add, id: .number(1), download: spec)
        XCTAssertEqual(try parse(String(decoding: request.encodedLine(), as: UTF8.self)).get(), request)
        var job = Job(id: "00000000000000a1", sequence: 1, spec: spec, owner: Owner(uid: 1000, gid: 0), created: Timestamp(microseconds: 0))
        job.reason = "waiting until 22:00 (window 22:00-06:00)"
        let line = TransferReply.job(id: nil, job: job).encodedLine()
        guard case .job(_, let decoded) = try TransferReply.decode(line: line) else { return XCTFail("not a job") }
        XCTAssertEqual(decoded.constraints, asked)
        XCTAssertEqual(decoded.reason, job.reason)
        let text = String(decoding: line, as: UTF8.self)
        XCTAssertTrue(text.contains(#""constraints":{"afterDeadline":"fail","deadline":"2026-11-28T00:00:00.000000Z""#), text)
    }
}
