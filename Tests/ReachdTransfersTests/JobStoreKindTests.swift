import Foundation
import GRDB
import ReachdModel
@testable import ReachdTransfers
import ReachdTransferModel
import XCTest

/// A stored row whose columns contradict its kind (written by hand or by a broken version) is refused with the
/// job named, not loaded as a record that mixes a download's and an upload's parts; the other rows load.
final class JobStoreKindTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "jobstore-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func assertRefused(_ sql: String, _ words: String, line: UInt = #line) throws {
        let store = try JobStore(directory: directory)
        let upload = Job(id: "00000000000000aa", sequence: 1, upload: UploadSpec(file: directory + "/in.bin", url: "http://up.test/in"),
                         owner: Owner(uid: 1000, gid: 1000), created: Timestamp(microseconds: 1_700_000_000_000_000))
        try store.save(upload)
        let download = Job(id: "00000000000000bb", sequence: 2, spec: DownloadSpec(url: "http://a.test/g.bin", output: directory + "/g.bin"),
                           owner: Owner(uid: 1000, gid: 1000), created: Timestamp(microseconds: 1_700_000_000_000_000))
        try store.save(download)
        XCTAssertEqual(try store.all().jobs, [upload, download], line: line)
        try store.database.write { try $0.execute(sql: sql + " WHERE id = '00000000000000aa'") }
        let stored = try store.all()
        XCTAssertEqual(stored.jobs, [download], line: line)
        XCTAssertEqual(stored.refused.count, 1, line: line)
        XCTAssertTrue("\(stored.refused)".contains("job 00000000000000aa: \(words)"), "\(stored.refused)", line: line)
    }

    func testAStoredUploadKeptFreshIsRefused() throws {
        try assertRefused("UPDATE job SET refreshSeconds = 60", "an upload is not kept fresh")
    }

    func testAStoredPutWithFormFieldsIsRefused() throws {
        try assertRefused(#"UPDATE job SET fields = '[{"name":"a","value":"b"}]'"#, "a PUT upload has no form fields")
    }

    func testAStoredDownloadWithAnUploadsAnswerIsRefused() throws {
        try assertRefused("UPDATE job SET kind = 'download', method = NULL, responseStatus = 201", "a download has no upload method")
    }
}
