import ReachdModel
import XCTest

final class ConnectivityTests: XCTestCase {
    func testProbeURL() {
        let table: [(String, String?, Int, String)] = [
            ("http://192.0.2.1/generate_204", "192.0.2.1", 80, "/generate_204"),
            ("http://check.example:8080", "check.example", 8080, "/"),
            ("http://[2001:db8::1]:81/x?y=1", "2001:db8::1", 81, "/x?y=1"),
            ("http://h?q", "h", 80, "/?q"),
        ]
        for (text, host, port, path) in table {
            let url = ProbeURL(text)
            XCTAssertEqual(url?.host, host, text)
            XCTAssertEqual(url?.port, port, text)
            XCTAssertEqual(url?.path, path, text)
        }
        for bad in ["https://a/", "ftp://a", "http://", "http://a:0/", "http://a:99999/", "http://u@a/", "http://[::1/", "http://a/b c", "http://a:x/"] {
            XCTAssertNil(ProbeURL(bad), bad)
        }
        XCTAssertEqual(ProbeURL("http://[2001:db8::1]:81/x")?.description, "http://[2001:db8::1]:81/x")
    }

    func testOutcomeMeaning() {
        let check = ConnectivityCheck(url: ProbeURL("http://192.0.2.1/generate_204")!)
        XCTAssertEqual(check.connectivity(for: .response(status: 204, body: [])), .full)
        XCTAssertEqual(check.connectivity(for: .response(status: 302, body: [])), .portal)
        XCTAssertEqual(check.connectivity(for: .response(status: 200, body: Array("<html>".utf8))), .portal)
        XCTAssertEqual(check.connectivity(for: .failed("timeout")), .limited)
        var body = ConnectivityCheck(url: ProbeURL("http://192.0.2.1/ok.txt")!, expectStatus: 200, expectBody: "OK")
        XCTAssertEqual(body.connectivity(for: .response(status: 200, body: Array("OK".utf8))), .full)
        XCTAssertEqual(body.connectivity(for: .response(status: 200, body: Array("Login".utf8))), .portal)
        body.intervalSeconds = 30
        XCTAssertEqual((0..<7).map { body.retryDelay(afterFailures: $0) }, [1, 2, 4, 8, 16, 30, 30])
        XCTAssertEqual(check.retryDelay(afterFailures: 10), 60)
    }
}
