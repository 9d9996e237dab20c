import ReachdModel
import XCTest

/// RFC 8910's announced URI, RFC 8908's API answer, and when to ask again.
final class CaptivePortalAPITests: XCTestCase {
    private func parse(_ text: String) -> Result<CaptivePortalStatus, CaptivePortalProblem> {
        CaptivePortalStatus.parse(Array(text.utf8))
    }

    /// The two answers of RFC 8908 §5.
    func testRFC8908Examples() throws {
        let captive = """
            {
               "captive": true,
               "user-portal-url": "https://example.org/portal.html"
            }
            """
        XCTAssertEqual(try parse(captive).get(), CaptivePortalStatus(captive: true, userPortalURL: "https://example.org/portal.html"))
        let free = """
            {
               "captive": false,
               "user-portal-url": "https://example.org/portal.html",
               "venue-info-url": "https://flight.example.com/entertainment",
               "seconds-remaining": 326,
               "can-extend-session": true
            }
            """
        XCTAssertEqual(
            try parse(free).get(),
            CaptivePortalStatus(
                captive: false, userPortalURL: "https://example.org/portal.html",
                venueInfoURL: "https://flight.example.com/entertainment", canExtendSession: true, secondsRemaining: 326))
    }

    func testCaptiveIsRequiredAndBoolean() throws {
        XCTAssertEqual(try parse(#"{"captive":false}"#).get(), CaptivePortalStatus(captive: false))
        XCTAssertEqual(try parse(#" {"captive" : true} "#).get(), CaptivePortalStatus(captive: true))
        XCTAssertEqual(parse(#"{}"#), .failure(.missingCaptive))
        XCTAssertEqual(parse(#"{"user-portal-url":"https://a/"}"#), .failure(.missingCaptive))
        for value in [#""true""#, "1", "null", "[]", "{}"] {
            XCTAssertEqual(parse(#"{"captive":\#(value)}"#), .failure(.wrongType("captive")), value)
        }
    }

    func testKnownKeysOfTheWrongType() {
        for (key, value) in [
            ("user-portal-url", "1"), ("venue-info-url", "null"), ("can-extend-session", #""yes""#),
            ("seconds-remaining", #""60""#), ("bytes-remaining", "true"),
        ] {
            XCTAssertEqual(parse(#"{"captive":false,"\#(key)":\#(value)}"#), .failure(.wrongType(key)), key)
        }
    }

    func testNumbersMustBeUnsigned64BitIntegers() throws {
        XCTAssertEqual(try parse(#"{"captive":false,"bytes-remaining":18446744073709551615}"#).get().bytesRemaining, .max)
        XCTAssertEqual(try parse(#"{"captive":false,"seconds-remaining":0}"#).get().secondsRemaining, 0)
        for number in ["-1", "-0", "1.5", "60.0", "1e3", "18446744073709551616", "99999999999999999999999"] {
            XCTAssertEqual(parse(#"{"captive":false,"seconds-remaining":\#(number)}"#), .failure(.wrongType("seconds-remaining")), number)
        }
        for broken in ["01", "1.", ".5", "+1", "1e", "0x10"] {
            guard case .failure(.notJSONObject) = parse(#"{"captive":false,"seconds-remaining":\#(broken)}"#) else {
                return XCTFail("\(broken) is not JSON")
            }
        }
    }

    func testURLsThatAreNotAcceptableHTTPSAreDropped() throws {
        for url in [
            "http://example.org/portal", "ftp://example.org/", "https://", "https:///path", "https://a b/", "https://a/\\u0007",
            "https://example.org/" + String(repeating: "p", count: 2029), "portal.html", "",
        ] {
            let status = try parse(#"{"captive":true,"user-portal-url":"\#(url)","venue-info-url":"\#(url)"}"#).get()
            XCTAssertEqual(status, CaptivePortalStatus(captive: true), url)
        }
        let kept = "https://example.org/" + String(repeating: "p", count: 2028)
        XCTAssertEqual(try parse(#"{"captive":true,"user-portal-url":"\#(kept)"}"#).get().userPortalURL, kept, "2048 bytes")
        XCTAssertEqual(try parse(#"{"captive":true,"user-portal-url":"HTTPS:\/\/[2001:db8::1]:8443\/x"}"#).get().userPortalURL, "HTTPS://[2001:db8::1]:8443/x")
    }

    func testUnknownKeysAndNestingAreIgnoredWithinLimits() throws {
        let extra = #"{"captive":true,"x-vendor":{"a":[1,2,{"b":null}],"c":"\u00e9\ud83d\ude00"},"future":[true,false]}"#
        XCTAssertEqual(try parse(extra).get(), CaptivePortalStatus(captive: true))
        XCTAssertEqual(try parse(#"{"captive":true,"captive":false}"#).get().captive, false, "the last of a repeated key wins")
        let deep = #"{"captive":true,"x":"# + String(repeating: "[", count: 31) + String(repeating: "]", count: 31) + "}"
        XCTAssertEqual(try parse(deep).get(), CaptivePortalStatus(captive: true), "32 levels")
        let tooDeep = #"{"captive":true,"x":"# + String(repeating: "[", count: 32) + String(repeating: "]", count: 32) + "}"
        XCTAssertEqual(parse(tooDeep), .failure(.notJSONObject("nested deeper than 32")))
        let hostile = #"{"captive":true,"x":"# + String(repeating: "[", count: 60_000)
        XCTAssertEqual(parse(hostile), .failure(.notJSONObject("nested deeper than 32")))
    }

    func testNotAJSONObject() {
        for text in ["", "   ", "[]", #""captive""#, "true", #"{"captive":true"#, #"{"captive":true}{"#, #"{"captive":tru}"#,
                     #"{captive:true}"#, #"{"captive":true,}"#, "{\"captive\":true,\"x\":\"a\u{1}\"}", #"{"x":"\ud800"}"#] {
            guard case .failure(.notJSONObject) = parse(text) else { return XCTFail("\(text) is not a JSON object") }
        }
        guard case .failure(.notJSONObject) = CaptivePortalStatus.parse(Array(#"{"captive":true,"x":""#.utf8) + [0xc3, 0x22, 0x7d]) else {
            return XCTFail("invalid UTF-8")
        }
    }

    func testOversizedBody() throws {
        let body = Array(#"{"captive":true,"x":""#.utf8) + [UInt8](repeating: 0x61, count: CaptivePortalStatus.maximumBody) + Array(#""}"#.utf8)
        XCTAssertEqual(CaptivePortalStatus.parse(body), .failure(.oversized(body.count)))
        let fits = Array(#"{"captive":true}"#.utf8) + [UInt8](repeating: 0x20, count: CaptivePortalStatus.maximumBody - 16)
        XCTAssertEqual(try CaptivePortalStatus.parse(fits).get(), CaptivePortalStatus(captive: true))
    }

    func testAnnouncement() {
        XCTAssertEqual(CaptivePortalAnnouncement(uri: "urn:ietf:params:capport:unrestricted"), .unrestricted)
        XCTAssertEqual(CaptivePortalAnnouncement(uri: "URN:IETF:params:capport:unrestricted"), .unrestricted)
        XCTAssertEqual(CaptivePortalAnnouncement(uri: "https://portal.test/capport"), .api("https://portal.test/capport"))
        XCTAssertEqual(CaptivePortalAnnouncement(uri: "HTTPS://user@portal.test:8443"), .api("HTTPS://user@portal.test:8443"))
        XCTAssertEqual(CaptivePortalAnnouncement(uri: "http://portal.test/capport"), .rejected("not an https URI"))
        XCTAssertEqual(CaptivePortalAnnouncement(uri: "urn:ietf:params:capport:unrestricted:x"), .rejected("not an https URI"))
        XCTAssertEqual(CaptivePortalAnnouncement(uri: "https://:443/"), .rejected("no host"))
        XCTAssertEqual(CaptivePortalAnnouncement(uri: "https://[]/"), .rejected("no host"))
        XCTAssertEqual(CaptivePortalAnnouncement(uri: "https://user@/"), .rejected("no host"))
        XCTAssertEqual(CaptivePortalAnnouncement(uri: ""), .rejected("empty"))
        let bad = CaptivePortalAnnouncement.rejected("over 2048 bytes, or a space, control or non-ASCII byte")
        XCTAssertEqual(CaptivePortalAnnouncement(uri: "https://portal.test/a b"), bad)
        XCTAssertEqual(CaptivePortalAnnouncement(uri: "https://portal.test/\n"), bad)
        XCTAssertEqual(CaptivePortalAnnouncement(uri: "https://portäl.test/"), bad)
        XCTAssertEqual(CaptivePortalAnnouncement(uri: "https://portal.test/" + String(repeating: "a", count: 2029)), bad)
    }

    func testScheduleAfterFailuresDoublesFrom5To300() {
        let seconds = (0...9).map { CaptivePortalSchedule.secondsUntilNextQuery(after: nil, failures: $0) }
        XCTAssertEqual(seconds, [5, 5, 10, 20, 40, 80, 160, 300, 300, 300])
        XCTAssertEqual(CaptivePortalSchedule.secondsUntilNextQuery(after: nil, failures: .max), 300)
        XCTAssertEqual(CaptivePortalSchedule.secondsUntilNextQuery(after: nil, failures: .min), 5)
    }

    func testScheduleFromAnAnswer() {
        func next(_ status: CaptivePortalStatus) -> Double {
            CaptivePortalSchedule.secondsUntilNextQuery(after: status, failures: 3)
        }
        XCTAssertEqual(next(CaptivePortalStatus(captive: true, secondsRemaining: 1000)), 10, "captive")
        XCTAssertEqual(next(CaptivePortalStatus(captive: false)), 600, "free, no limit")
        XCTAssertEqual(next(CaptivePortalStatus(captive: false, secondsRemaining: 326)), 296, "30 s before the end")
        XCTAssertEqual(next(CaptivePortalStatus(captive: false, secondsRemaining: 34)), 5, "at least 5 s")
        XCTAssertEqual(next(CaptivePortalStatus(captive: false, secondsRemaining: 0)), 5)
        XCTAssertEqual(next(CaptivePortalStatus(captive: false, secondsRemaining: 631)), 600, "at most 600 s")
        XCTAssertEqual(next(CaptivePortalStatus(captive: false, secondsRemaining: .max)), 600)
    }

    func testProblemsDescribeThemselves() {
        XCTAssertEqual(CaptivePortalProblem.missingCaptive.description, #"captive portal API answer has no "captive""#)
        XCTAssertEqual(CaptivePortalProblem.wrongType("bytes-remaining").description, #"captive portal API answer has "bytes-remaining" of the wrong type"#)
        XCTAssertEqual(CaptivePortalProblem.oversized(70000).description, "captive portal API answer too large (70000 bytes, at most 65536)")
        XCTAssertEqual(CaptivePortalProblem.notJSONObject("x").description, "captive portal API answer is not a JSON object (x)")
    }
}
