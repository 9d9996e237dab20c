import ReachdModel
import ReachdProtocol
import ReachdTestSupport
import XCTest

/// reachd's wire format both ways: replies written by `ReplyWriter` and read back by `ReplyReader` are the
/// replies written, over many generated verdicts (every field, present and absent; awkward text).
final class ReplyRoundTripTests: XCTestCase {
    func testGeneratedRepliesReadBackAsWritten() throws {
        var random = SeededGenerator(seed: 0x5EED_34)
        for round in 0..<500 {
            let reply = Self.reply(&random)
            let line = reply.encodedLine()
            XCTAssertEqual(line.last, UInt8(ascii: "\n"), "round \(round)")
            XCTAssertEqual(line.filter { $0 == UInt8(ascii: "\n") }.count, 1, "round \(round): one line")
            let read = try Reply.decode(line: Array(line.dropLast()))
            XCTAssertEqual(read, reply, "round \(round): \(String(decoding: line, as: UTF8.self))")
            // The writer's output is a fixed point: what was read writes the same bytes.
            XCTAssertEqual(read.encodedLine(), line, "round \(round)")
        }
    }

    // MARK: - Generators

    private static func reply(_ random: inout SeededGenerator) -> Reply {
        let id: RequestID? = switch random.next() % 3 {
        case 0: nil
        case 1: .number(Int64(bitPattern: random.next()) >> Int64(random.next() % 63))
        default: .string(text(&random))
        }
        switch random.next() % 5 {
        case 0: return .status(id: id, verdict: stamped(&random))
        case 1: return .subscribed(id: id, verdicts: (0..<Int(random.next() % 4)).map { _ in stamped(&random) })
        case 2: return .event(verdict: stamped(&random))
        case 3: return .pong(id: id)
        default:
            let codes: [ProtocolError.Code] = [.badJSON, .badRequest, .unknownOp]
            return .error(ProtocolError(codes[Int(random.next() % UInt64(codes.count))], text(&random), id: id))
        }
    }

    private static func stamped(_ random: inout SeededGenerator) -> StampedVerdict {
        let host = random.next() % 2 == 0
        var verdict = Verdict(
            target: host ? text(&random, nonEmpty: true) : "internet", reachable: random.bool, status: pick(&random),
            metered: random.bool, meteredReason: maybe(&random) { text(&$0) }, interface: maybe(&random) { text(&$0) },
            flags: flags(&random), reason: maybe(&random) { text(&$0) }, family: maybe(&random) { pick(&$0) },
            ipv4: family(&random), ipv6: family(&random), addresses: host ? (0..<Int(random.next() % 4)).map { _ in address(&random) } : nil,
            reasonCode: maybe(&random) { pick(&$0) }, meteredState: pick(&random), meteredSource: maybe(&random) { pick(&$0) })
        // `connectivity` is written for `internet` only; a host's reads back as `unknown`.
        if !host { verdict.connectivity = pick(&random) }
        verdict.captivePortal = maybe(&random) { random in
            CaptivePortal(apiURL: text(&random), status: maybe(&random) { random in
                CaptivePortalStatus(
                    captive: random.bool, userPortalURL: maybe(&random) { text(&$0) }, venueInfoURL: maybe(&random) { text(&$0) },
                    canExtendSession: maybe(&random) { $0.bool }, secondsRemaining: maybe(&random) { $0.next() },
                    bytesRemaining: maybe(&random) { $0.next() })
            })
        }
        verdict.budget = maybe(&random) { random in
            BudgetStatus(state: pick(&random), usedBytes: random.next(), limitBytes: random.next(), period: text(&random), resetsAt: time(&random))
        }
        verdict.roamingSource = maybe(&random) { pick(&$0) }
        // Any SSID bytes (not only UTF-8, with backslashes and control bytes): the wire keeps them exactly.
        verdict.wifiNetwork = maybe(&random) { random in
            let ssid = (0..<(1 + Int(random.next() % 32))).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            return WifiIdentity(ssid: ssid, bssid: random.bool ? (0..<6).map { _ in UInt8(truncatingIfNeeded: random.next()) } : nil)
        } ?? nil
        return StampedVerdict(verdict: verdict, sequence: random.next(), timestamp: time(&random))
    }

    private static func family(_ random: inout SeededGenerator) -> FamilyVerdict {
        FamilyVerdict(
            reachable: random.bool, status: pick(&random), flags: flags(&random), metered: random.bool, meteredState: pick(&random),
            meteredSource: maybe(&random) { pick(&$0) }, meteredReason: maybe(&random) { text(&$0) }, interface: maybe(&random) { text(&$0) },
            kind: maybe(&random) { pick(&$0) }, kindSource: maybe(&random) { text(&$0) }, gateway: maybe(&random) { address(&$0) },
            metric: maybe(&random) { UInt32(truncatingIfNeeded: $0.next()) }, reason: maybe(&random) { text(&$0) },
            reasonCode: maybe(&random) { pick(&$0) })
    }

    private static func flags(_ random: inout SeededGenerator) -> ReachabilityFlags {
        var flags: ReachabilityFlags = []
        for (_, flag) in ReachabilityFlags.named where random.bool { flags.insert(flag) }
        return flags
    }

    private static func address(_ random: inout SeededGenerator) -> IPAddress {
        let bits = random.next()
        let text = random.bool
            ? "\(bits & 0xFF).\(bits >> 8 & 0xFF).\(bits >> 16 & 0xFF).\(bits >> 24 & 0xFF)"
            : "2001:db8:\(String(bits & 0xFFFF, radix: 16))::\(String(bits >> 16 & 0xFFFF, radix: 16)):\(String(bits >> 32 & 0xFFFF, radix: 16))"
        return IPAddress(text)!
    }

    /// A time between 1970 and 2100, to the microsecond.
    private static func time(_ random: inout SeededGenerator) -> Timestamp {
        Timestamp(microseconds: Int64(random.next() % 4_102_444_800_000_000))
    }

    /// Text with what JSON must escape (quotes, backslashes, every control character) and more than ASCII.
    private static func text(_ random: inout SeededGenerator, nonEmpty: Bool = false) -> String {
        let alphabet: [Character] = ["a", "Z", "0", ".", "-", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{7}", "\u{1F}", "\u{7F}",
                                     "é", "✓", "😀", "\u{2028}", "\u{FEFF}"]
        let count = Int(random.next() % 12) + (nonEmpty ? 1 : 0)
        return String((0..<count).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
    }

    private static func pick<T: CaseIterable>(_ random: inout SeededGenerator) -> T {
        let all = Array(T.allCases)
        return all[Int(random.next() % UInt64(all.count))]
    }

    private static func maybe<T>(_ random: inout SeededGenerator, _ make: (inout SeededGenerator) -> T) -> T? {
        random.bool ? make(&random) : nil
    }
}

extension SeededGenerator {
    var bool: Bool { mutating get { next() & 1 == 1 } }
}
