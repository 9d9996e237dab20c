import ReachdTransferModel
import XCTest

/// The fields every request carries, where credentials may go, and a failed request as the job's outcome.
final class RequestRulesTests: XCTestCase {
    func testEveryRequestAsksForIdentityOnAConnectionOfItsOwnAndCredentialsAddAuthorization() {
        let common = RequestFields.sent(credentials: nil)
        XCTAssertEqual(common.map(\.name), ["User-Agent", "Connection", "Accept-Encoding"])
        XCTAssertEqual(common.map(\.value), ["reachd-transfers/1", "close", "identity"])
        let sent = RequestFields.sent(credentials: .bearer(token: "t0k"))
        XCTAssertEqual(sent.map(\.name), ["User-Agent", "Connection", "Accept-Encoding", "Authorization"])
        XCTAssertEqual(sent.last?.value, "Bearer t0k")
    }

    func testCredentialsGoOverHttpsOrWhereThePlainHttpIsAllowed() {
        let basic = Credentials.basic(login: "u", password: "p")
        let table: [(url: String, credentials: Credentials?, allowInsecure: Bool, sent: String?, refused: Bool)] = [
            ("https://a.test/f", basic, false, "Basic dTpw", false),
            ("HTTPS://a.test/f", basic, false, "Basic dTpw", false),
            ("http://a.test/f", basic, true, "Basic dTpw", false),
            ("http://a.test/f", basic, false, nil, true),
            ("http://a.test/f", nil, false, nil, false),
            ("https://a.test/f", nil, true, nil, false),
        ]
        for row in table {
            let decision = CredentialRule.decide(url: row.url, credentials: row.credentials, allowInsecureAuth: row.allowInsecure)
            switch decision {
            case .none: XCTAssertTrue(row.sent == nil && !row.refused, "\(row)")
            case .authorize(let value): XCTAssertEqual(value, row.sent, "\(row)")
            case .refuse(.failed(let reason)):
                XCTAssertTrue(row.refused, "\(row)")
                XCTAssertEqual(reason, "failed: the netrc has credentials for this server but the URL is plain http; "
                    + "use https, or --allow-insecure-auth to send them readable")
            case .refuse(let outcome): XCTFail("\(row): \(outcome)")
            }
        }
    }

    func testRedirectsAreFollowedOnlyWithoutCredentialsAndBody() {
        XCTAssertTrue(CredentialRule.followsRedirects(credentials: nil, hasBody: false))
        XCTAssertFalse(CredentialRule.followsRedirects(credentials: .bearer(token: "t"), hasBody: false))
        XCTAssertFalse(CredentialRule.followsRedirects(credentials: nil, hasBody: true))
    }

    func testAFailedRequestIsTheJobsOutcome() {
        func text(_ outcome: FetchOutcome) -> String {
            switch outcome {
            case .failed(let reason): "failed|\(reason)"
            case .retry(let reason, let after): "retry|\(reason)|\(after.map { "\($0)" } ?? "-")"
            case .stopped: "stopped"
            default: "other"
            }
        }
        let table: [(failure: TransportFailure, cancelled: Bool, outcome: String)] = [
            (.redirectLimit, true, "failed|failed: more than 5 redirects, or a redirect loop"),
            (.handshake("x509"), false, "failed|failed: TLS: x509 (a certificate the system does not trust? [downloads] ca_file adds a CA)"),
            (.tls("bad record"), false, "failed|failed: TLS: bad record"),
            (.file("the file to upload got shorter"), false, "failed|failed: the file to upload got shorter"),
            (.network("connect timeout"), false, "retry|network error: connect timeout|-"),
            (.network("connect timeout"), true, "stopped"),
        ]
        for row in table { XCTAssertEqual(text(row.failure.outcome(cancelled: row.cancelled)), row.outcome, "\(row.failure)") }
    }
}
