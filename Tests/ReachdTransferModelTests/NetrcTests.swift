import Foundation
import ReachdModel
import ReachdTransferModel
import XCTest

final class NetrcTests: XCTestCase {
    func testEntriesDefaultsAndQuoting() {
        let netrc = Netrc("""
            machine Mirror.TEST login alice password "pa55 word"
            machine tokens.test
              login bearer
              password abc.def
            machine other.test login bob account x password p\\ q
            default login anonymous password guest
            macdef init
            machine never.test login x password y
            """)
        XCTAssertEqual(netrc.credentials(for: "mirror.test"), .basic(login: "alice", password: "pa55 word"))
        XCTAssertEqual(netrc.credentials(for: "tokens.test"), .bearer(token: "abc.def"))
        XCTAssertEqual(netrc.credentials(for: "other.test"), .basic(login: "bob", password: "p q"))
        XCTAssertEqual(netrc.credentials(for: "elsewhere.test"), .basic(login: "anonymous", password: "guest"))
        XCTAssertEqual(netrc.credentials(for: "never.test"), .basic(login: "anonymous", password: "guest"), "macdef ends the file")
        XCTAssertNil(Netrc("machine a.test login x").credentials(for: "a.test"), "no password, no credentials")
        XCTAssertNil(Netrc("").credentials(for: "a.test"))
    }

    func testAuthorizationHeaders() {
        XCTAssertEqual(Credentials.basic(login: "Aladdin", password: "open sesame").authorization, "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        XCTAssertEqual(Credentials.basic(login: "a", password: "").authorization, "Basic YTo=")
        XCTAssertEqual(Credentials.basic(login: "ab", password: "c").authorization, "Basic YWI6Yw==")
        XCTAssertEqual(Credentials.bearer(token: "t").authorization, "Bearer t")
    }
}
