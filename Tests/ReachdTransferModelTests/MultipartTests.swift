import Foundation
import ReachdModel
import ReachdTransferModel
import XCTest

final class MultipartTests: XCTestCase {
    func testBodyAroundTheFile() {
        let form = MultipartForm(boundary: "B0", fields: [FormField(name: "a\"b", value: "x\r\ny")], fileField: "file", fileName: "n\".bin")
        XCTAssertEqual(String(decoding: form.head, as: UTF8.self),
                       "--B0\r\nContent-Disposition: form-data; name=\"a%22b\"\r\n\r\nx\r\ny\r\n"
                       + "--B0\r\nContent-Disposition: form-data; name=\"file\"; filename=\"n%22.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n")
        XCTAssertEqual(String(decoding: form.tail, as: UTF8.self), "\r\n--B0--\r\n")
        XCTAssertEqual(form.contentLength(fileSize: 10), Int64(form.head.count + 10 + form.tail.count))
        XCTAssertEqual(form.mediaType, "multipart/form-data; boundary=B0")
    }

    func testRandomBoundariesDiffer() {
        var generator = SystemRandomNumberGenerator()
        let a = MultipartForm.randomBoundary(using: &generator), b = MultipartForm.randomBoundary(using: &generator)
        XCTAssertNotEqual(a, b)
        XCTAssertTrue(a.hasPrefix("reachd-") && a.count <= 70, a)
    }
}
