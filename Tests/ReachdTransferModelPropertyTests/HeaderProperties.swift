import PropertyBased
import ReachdModel
import ReachdTransferModel
import Testing

/// Properties of the parsers of server input and of the resume decision, over generated input (Swift Testing
/// with swift-property-based, which shrinks a failing input and prints the seed that reproduces it).
@Suite struct HeaderProperties {
    /// Any bytes a server may send, read as the header value NIO hands over (UTF-8, invalid bytes replaced).
    static let anyValue = Gen.uint8(in: 0...255).array(of: 0...80).map { String(decoding: $0, as: UTF8.self) }
    /// Values made of the characters that matter to the parsers, so that near-misses are frequent.
    static let headerish = Gen.element(of: Array("0123456789-=,;\"\\ \t*/WbytesGMTmax-agno-strW/\"")).map { $0 ?? " " }
        .array(of: 0...40).map { String($0) }

    @Test func contentLengthIsTotalAndExactOnDigits() async {
        await propertyCheck(input: Self.anyValue) { value in
            if let length = contentLength(value) { #expect(length >= 0) }
        }
        // Exact up to 18 significant digits, whatever the leading zeros; longer numbers are no length at all.
        await propertyCheck(input: Gen.int64(in: 0 ... .max), Gen.int(in: 0...30)) { n, zeros in
            let expected = n < 1_000_000_000_000_000_000 ? n : nil
            #expect(contentLength(String(n)) == expected)
            #expect(contentLength(String(repeating: "0", count: zeros) + String(n)) == expected)
            #expect(contentLength("+" + String(n)) == nil)
        }
    }

    @Test func cacheControlIsTotalAndKeepsTheSmallestMaxAge() async {
        await propertyCheck(input: Self.headerish) { value in
            let directives = CacheControl(value)
            if let maxAge = directives.maxAge { #expect((0 ... 1 << 31).contains(maxAge)) }
        }
        await propertyCheck(input: Gen.int64(in: 0 ... 1 << 40), Gen.int64(in: 0 ... 1 << 40)) { a, b in
            let directives = CacheControl("max-age=\(a), no-transform, max-age=\"\(b)\"")
            #expect(directives.maxAge == min(min(a, b), 1 << 31))
        }
    }

    @Test func freshnessNeverEndsBeforeItStartsWhateverTheDates() async {
        let now = Timestamp(microseconds: 1_700_000_000 * 1_000_000)
        await propertyCheck(input: Self.headerish, Self.headerish, Self.headerish) { cacheControl, expires, age in
            let freshness = CacheFreshness(cacheControl: cacheControl, expires: expires, date: nil, age: age, now: now)
            if let until = freshness.freshUntil { #expect(until > now) }
            if let until = freshness.staleIfErrorUntil { #expect(until >= now) }
        }
    }

    @Test func httpDatesRoundTripOverFourDigitYears() async {
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let firstYear: Int64 = 1000, lastYear: Int64 = 9999
        let start = HTTPDate.unixSeconds("Wed, 01 Jan 1000 00:00:00 GMT")!, end = HTTPDate.unixSeconds("Fri, 31 Dec 9999 23:59:59 GMT")!
        await propertyCheck(input: Gen.int64(in: start ... end)) { seconds in
            // Civil date from Unix seconds (Howard Hinnant's algorithm), written as an IMF-fixdate.
            let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400, time = seconds - days * 86400
            let z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097, doe = z - era * 146097
            let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365, doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
            let mp = (5 * doy + 2) / 153, day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9
            let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
            #expect((firstYear ... lastYear).contains(year))
            func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
            let text = "Mon, \(two(day)) \(months[Int(month - 1)]) \(year) \(two(time / 3600)):\(two(time / 60 % 60)):\(two(time % 60)) GMT"
            #expect(HTTPDate.unixSeconds(text) == seconds, "\(text)")
        }
    }

    @Test func varyIgnoresOrderCaseAndFieldsItDoesNotName() async {
        let names = Gen.element(of: ["Accept", "Authorization", "User-Agent", "Accept-Language"]).map { $0 ?? "Accept" }
        await propertyCheck(input: names.array(of: 1...4), Gen.bool) { fields, upper in
            let vary = CacheVary(fields.joined(separator: ", "))
            let reversed = CacheVary(fields.reversed().map { upper ? $0.uppercased() : $0.lowercased() }.joined(separator: ","))
            #expect(vary == reversed)
            let request = [("Authorization", "Basic x"), ("Accept", "*/*"), ("X-Other", "1")]
            #expect(vary.selectingText(of: request) == vary.selectingText(of: request.reversed() + [("X-Unrelated", "2")]))
        }
    }
}

/// The resume decision never splices: whatever a server answers to a resume at `offset`, the body is written
/// at that offset only when the 206 continues exactly the partial file's version, at that offset, to its total.
@Suite struct ResumeProperties {
    static let etags = Gen.element(of: ["\"v1\"", "\"v2\"", "W/\"v1\"", "v1", "\"\"", ""]).map { $0 ?? "" }.optional
    static let dates = Gen.element(of: ["Sun, 06 Nov 1994 08:49:37 GMT", "Mon, 07 Nov 1994 08:49:37 GMT", "yesterday"]).map { $0 ?? "" }.optional

    @Test func aResumeIsWrittenOnlyWhenEverythingMatches() async {
        let validators = zip(Self.etags, Self.dates, Gen.bool).map { Validators(etag: $0, lastModified: $1, lastModifiedIsStrong: $2) }
        let randomRange = zip(Gen.int64(in: 0...2000), Gen.int64(in: 0...2000), Gen.int64(in: 0...3000).optional, Gen.bool)
            .map { first, last, total, star -> String in
                star ? "bytes */\(total.map(String.init) ?? "*")" : "bytes \(first)-\(last)/\(total.map(String.init) ?? "*")"
            }.optional
        let statuses = Gen.element(of: [200, 206, 206, 206, 304, 416, 500]).map { $0 ?? 206 }
        // Half the cases answer with the partial file's own validators and the exact range, so that the
        // accepted resume is reached often and its near misses (one field off) are too.
        let answers = zip(statuses, randomRange, validators, Gen.bool, Gen.bool)
        var resumes = 0
        await propertyCheck(count: 5000, input: answers, validators, Gen.int64(in: 1...2000), Gen.int64(in: 1...3000).optional) {
            answer, partial, offset, total in
            let (status, randomRange, otherValidators, exactRange, sameVersion) = answer
            let range = exactRange ? "bytes \(offset)-\((total ?? offset + 1) - 1)/\(total.map(String.init) ?? "*")" : randomRange
            let served = sameVersion ? partial : otherValidators
            let response = ResumePlan.Response(status: status, contentRange: range, validators: served)
            let action = ResumePlan.interpret(response, offset: offset, current: partial, total: total)
            guard case .write(let at, let writtenTotal, let kept) = action, at > 0 else { return }
            let parsed = range.flatMap(ContentRange.init)
            #expect(status == 206)
            #expect(at == offset)
            #expect(parsed?.first == offset)
            #expect(served.continues(partial))
            #expect(partial.strongETag != nil || partial.lastModifiedIsStrong, "only a strong validator guards a resume")
            #expect(kept == partial)
            if let total { #expect(writtenTotal == total) }
            resumes += 1
        }
        #expect(resumes > 0, "the generator reaches the accepted resume at all")
    }
}
