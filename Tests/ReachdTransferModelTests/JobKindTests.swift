import Foundation
import ReachdModel
import ReachdTransferModel
import XCTest

/// A job record is a download or an upload: what only the other kind has cannot be represented, and a sent
/// record that carries it is refused with the key named.
final class JobKindTests: XCTestCase {
    private let owner = Owner(uid: 1000, gid: 1000)
    private let created = Timestamp(microseconds: 1_700_000_000_000_000)

    private func upload(_ method: UploadMethod) -> Job {
        Job(id: "00000000000000aa", sequence: 1, upload: UploadSpec(file: "/srv/in.bin", url: "http://up.test/in", method: method,
                                                                     fields: [FormField(name: "a", value: "b")]),
            owner: owner, created: created)
    }

    private var download: Job {
        Job(id: "00000000000000bb", sequence: 2, spec: DownloadSpec(url: "http://mirror.test/x", output: "/srv/x.iso", refreshSeconds: 60),
            owner: owner, created: created)
    }

    /// `job`'s wire form with `changes` applied to its keys.
    private func wire(_ job: Job, _ changes: [String: Any]) throws -> Data {
        var object = try XCTUnwrap(JSONSerialization.jsonObject(with: JSONEncoder().encode(job)) as? [String: Any])
        object.merge(changes) { $1 }
        return try JSONSerialization.data(withJSONObject: object)
    }

    private func assertRefused(_ data: Data, naming key: String, _ words: String, line: UInt = #line) {
        XCTAssertThrowsError(try JSONDecoder().decode(Job.self, from: data), line: line) { error in
            guard case DecodingError.dataCorrupted(let context) = error else { return XCTFail("\(error)", line: line) }
            XCTAssertEqual(context.codingPath.last?.stringValue, key, line: line)
            XCTAssertTrue(context.debugDescription.contains(words), context.debugDescription, line: line)
        }
    }

    func testEachKindKeepsOnlyItsOwnParts() throws {
        let put = upload(.put)
        XCTAssertEqual(put.upload?.form, .put, "a PUT drops the form fields it was given")
        XCTAssertNil(put.download)
        XCTAssertEqual(upload(.post).upload?.form, .post(fields: [FormField(name: "a", value: "b")], fileField: "file"))
        XCTAssertEqual(download.download?.refreshSeconds, 60)
        XCTAssertNil(download.upload)
        for job in [put, upload(.post), download] {
            XCTAssertEqual(try JSONDecoder().decode(Job.self, from: JSONEncoder().encode(job)).kind, job.kind)
        }
    }

    func testAnUploadKeptFreshIsRefused() throws {
        assertRefused(try wire(upload(.put), ["refreshEvery": 60]), naming: "refreshEvery", "an upload has no refreshEvery")
        assertRefused(try wire(upload(.post), ["nextCheck": "2023-11-14T22:13:20.000000Z"]), naming: "nextCheck", "an upload has no")
        assertRefused(try wire(upload(.put), ["sha256": String(repeating: "ab", count: 32)]), naming: "sha256", "an upload has no")
    }

    func testAPutWithFormFieldsIsRefused() throws {
        assertRefused(try wire(upload(.put), ["fields": [["name": "a", "value": "b"]]]), naming: "method", "a PUT upload has no form fields")
        assertRefused(try wire(upload(.post), ["fileField": NSNull()]), naming: "method", "a POST upload needs the file part's name")
    }

    func testADownloadWithAnUploadsAnswerIsRefused() throws {
        assertRefused(try wire(download, ["responseStatus": 201]), naming: "responseStatus", "a download has no responseStatus")
        assertRefused(try wire(download, ["method": "PUT"]), naming: "method", "a download has no method")
    }
}
