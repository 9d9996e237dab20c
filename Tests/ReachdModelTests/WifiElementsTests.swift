import ReachdModel
import XCTest

/// A BSS's information elements (wpa_supplicant's `IEs`) read as hostile input, and the cost hints of the
/// vendor-specific elements: Microsoft's Network Cost and Apple's Personal Hotspot.
final class WifiElementsTests: XCTestCase {
    static let ssid: [UInt8] = [0x00, 0x04] + Array("home".utf8)
    static let rates: [UInt8] = [0x01, 0x08, 0x82, 0x84, 0x8B, 0x96, 0x0C, 0x12, 0x18, 0x24]
    static let channel: [UInt8] = [0x03, 0x01, 0x06]
    /// RSN: WPA2-PSK, CCMP.
    static let rsn: [UInt8] = [
        0x30, 0x14, 0x01, 0x00, 0x00, 0x0F, 0xAC, 0x04, 0x01, 0x00, 0x00, 0x0F, 0xAC, 0x04, 0x01, 0x00, 0x00, 0x0F, 0xAC,
        0x02, 0x0C, 0x00,
    ]
    /// WMM parameters: Microsoft's OUI, type 2.
    static let wmm: [UInt8] = [
        0xDD, 0x18, 0x00, 0x50, 0xF2, 0x02, 0x01, 0x01, 0x00, 0x00, 0x03, 0xA4, 0x00, 0x00, 0x27, 0xA4, 0x00, 0x00, 0x42,
        0x43, 0x5E, 0x00, 0x62, 0x32, 0x2F, 0x00,
    ]
    /// An iPhone's hotspot element.
    static let apple: [UInt8] = [0xDD, 0x0A, 0x00, 0x17, 0xF2, 0x06, 0x01, 0x01, 0x03, 0x03, 0x00, 0x00]

    /// A Network Cost element of `level` and `flags`, written little-endian as the specification says.
    static func networkCost(level: UInt16, flags: UInt16 = 0) -> [UInt8] {
        [0xDD, 0x08, 0x00, 0x50, 0xF2, 0x11, UInt8(level & 0xFF), UInt8(level >> 8), UInt8(flags & 0xFF), UInt8(flags >> 8)]
    }

    private func parse(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> WifiElements {
        guard case .success(let list) = WifiElements.parse(bytes) else {
            XCTFail("\(bytes.count) bytes refused", file: file, line: line)
            return WifiElements()
        }
        return list
    }

    private func hints(_ bytes: [UInt8]) -> WifiHints { parse(bytes).hints }

    func testEmptyInput() {
        XCTAssertEqual(parse([]), WifiElements())
        XCTAssertEqual(hints([]), WifiHints())
        XCTAssertNil(hints([]).meteredState)
    }

    func testOneElement() {
        XCTAssertEqual(parse(Self.ssid), WifiElements(elements: [WifiElement(id: 0, body: Array("home".utf8))]))
        XCTAssertNil(hints(Self.ssid).meteredState, "the SSID says nothing")
    }

    func testABeaconSplitsIntoItsElements() {
        let list = parse(Self.ssid + Self.rates + Self.channel + Self.rsn + Self.wmm + Self.networkCost(level: 2))
        XCTAssertEqual(list.elements.map(\.id), [0, 1, 3, 48, 221, 221])
        XCTAssertEqual(list.elements.map(\.body.count), [4, 8, 1, 20, 24, 8])
        XCTAssertEqual(list.truncatedBytes, 0)
    }

    /// NetworkManager finds the element only when it comes last; its own length is what counts.
    func testNetworkCostFirstInTheMiddleAndLast() {
        let cost = Self.networkCost(level: 2)
        let fixed = WifiHints(networkCost: ConnectionCost(level: .fixed))
        let places: [([UInt8], String)] = [
            (cost + Self.ssid + Self.rates + Self.wmm, "first"),
            (Self.ssid + Self.rates + cost + Self.rsn + Self.wmm, "in the middle"),
            (Self.ssid + Self.wmm + cost + Self.rsn, "right after another vendor element"),
            (Self.ssid + Self.rates + Self.rsn + cost, "last"),
            (cost, "alone"),
        ]
        for (bytes, place) in places {
            XCTAssertEqual(hints(bytes), fixed, place)
            XCTAssertEqual(hints(bytes).meteredState, .guessYes, place)
        }
    }

    func testEachCostLevel() {
        let levels: [(UInt16, CostLevel, MeteredState)] = [
            (0x0001, .unrestricted, .guessNo), (0x0002, .fixed, .guessYes), (0x0004, .variable, .guessYes),
        ]
        for (level, cost, state) in levels {
            let read = hints(Self.ssid + Self.networkCost(level: level) + Self.rsn)
            XCTAssertEqual(read.networkCost, ConnectionCost(level: cost), "level \(level)")
            XCTAssertEqual(read.meteredState, state, "level \(level)")
        }
        for level: UInt16 in [0x0000, 0x0003, 0x0006, 0x0008, 0x0100, 0x0102, 0xFFFF] {
            XCTAssertEqual(hints(Self.ssid + Self.networkCost(level: level)), WifiHints(), "level \(level) is no known level")
        }
    }

    func testCostFlags() {
        let table: [(UInt16, ConnectionCost)] = [
            (0x0001, ConnectionCost(level: .fixed, overDataLimit: true)),
            (0x0002, ConnectionCost(level: .fixed)),  // congested: not kept
            (0x0004, ConnectionCost(level: .fixed, roaming: true)),
            (0x0008, ConnectionCost(level: .fixed, approachingDataLimit: true)),
            (0x000D, ConnectionCost(level: .fixed, roaming: true, approachingDataLimit: true, overDataLimit: true)),
            (0xFFF0, ConnectionCost(level: .fixed)),  // unknown bits
        ]
        for (flags, cost) in table {
            XCTAssertEqual(hints(Self.networkCost(level: 2, flags: flags)).networkCost, cost, "flags \(flags)")
        }
        // Microsoft's examples: over the limit but throttled only; over the limit and charged; roaming.
        XCTAssertEqual(hints(Self.networkCost(level: 1, flags: 1)).meteredState, .guessNo)
        XCTAssertEqual(hints(Self.networkCost(level: 4, flags: 1)).meteredState, .guessYes)
        XCTAssertEqual(hints(Self.networkCost(level: 4, flags: 4)).networkCost, ConnectionCost(level: .variable, roaming: true))
    }

    /// The attribute is little-endian: Samsung's and MediaTek's hotspots send 02 00 00 00 (fixed). The same bytes
    /// reversed, as the specification's table of examples prints the values, are level 0: no hint.
    func testByteOrder() {
        XCTAssertEqual(hints([0xDD, 0x08, 0x00, 0x50, 0xF2, 0x11, 0x02, 0x00, 0x00, 0x00]).meteredState, .guessYes)
        XCTAssertEqual(hints([0xDD, 0x08, 0x00, 0x50, 0xF2, 0x11, 0x00, 0x00, 0x00, 0x02]), WifiHints())
        XCTAssertEqual(
            hints([0xDD, 0x08, 0x00, 0x50, 0xF2, 0x11, 0x02, 0x00, 0x02, 0x00]).networkCost, ConnectionCost(level: .fixed),
            "fixed, congested")
    }

    func testNetworkCostByItsOwnLength() {
        let full = Self.networkCost(level: 2)
        for length in 0..<8 {
            let short = [0xDD, UInt8(length)] + full[2..<(2 + length)]
            let list = parse(Self.ssid + short + Self.rsn)
            XCTAssertEqual(list.elements.count, 3, "length \(length) still an element")
            XCTAssertEqual(list.hints, WifiHints(), "length \(length) too short")
            // Too short, whatever follows it: a reader of the buffer's rest would take the RSN element's bytes.
            XCTAssertEqual(hints(short + Self.networkCost(level: 2).suffix(4) + Self.rsn), WifiHints(), "length \(length)")
        }
        let longer: [UInt8] = [0xDD, 0x0B, 0x00, 0x50, 0xF2, 0x11, 0x04, 0x00, 0x00, 0x00, 0xAA, 0xBB, 0xCC]
        XCTAssertEqual(hints(longer + Self.rsn).networkCost, ConnectionCost(level: .variable), "bytes after the attribute ignored")
    }

    func testFirstReadableNetworkCostCounts() {
        XCTAssertEqual(hints(Self.networkCost(level: 2) + Self.networkCost(level: 1)).networkCost?.level, .fixed)
        XCTAssertEqual(hints(Self.networkCost(level: 0) + Self.networkCost(level: 1)).networkCost?.level, .unrestricted)
        XCTAssertEqual(hints([0xDD, 0x05, 0x00, 0x50, 0xF2, 0x11, 0x02] + Self.networkCost(level: 4)).networkCost?.level, .variable)
    }

    func testAnElementRunningPastTheEnd() {
        let cut: [UInt8] = [0xDD, 0x20, 0x00, 0x50, 0xF2, 0x11, 0x02, 0x00, 0x00, 0x00]
        let list = parse(Self.ssid + Self.rsn + cut)
        XCTAssertEqual(list.elements.map(\.id), [0, 48])
        XCTAssertEqual(list.truncatedBytes, cut.count)
        XCTAssertEqual(list.hints, WifiHints(), "a cut element is not read")
        XCTAssertEqual(hints(Self.networkCost(level: 4) + cut).networkCost?.level, .variable, "the elements before it are")
        XCTAssertEqual(parse(Self.ssid + Self.networkCost(level: 2).dropLast()).truncatedBytes, 9, "one byte short")
        XCTAssertEqual(parse(Self.apple + [0xDD, 0xFF] + [UInt8](repeating: 0, count: 254)).truncatedBytes, 256, "the longest cut")
    }

    func testATruncatedHeader() {
        XCTAssertEqual(parse([0xDD]), WifiElements(truncatedBytes: 1))
        XCTAssertEqual(parse(Self.ssid + [0xDD]), WifiElements(elements: [WifiElement(id: 0, body: Array("home".utf8))], truncatedBytes: 1))
        XCTAssertEqual(parse([0xDD, 0x01]), WifiElements(truncatedBytes: 2), "a length with no body")
        XCTAssertEqual(parse(Self.apple + [0x00]).hints, WifiHints(applePersonalHotspot: true))
    }

    func testZeroLengthElements() {
        let list = parse([0xDD, 0x00, 0x00, 0x00, 0xDD, 0x00] + Self.networkCost(level: 4) + [0xDD, 0x00])
        XCTAssertEqual(list.elements, [
            WifiElement(id: 221, body: []), WifiElement(id: 0, body: []), WifiElement(id: 221, body: []),
            WifiElement(id: 221, body: [0x00, 0x50, 0xF2, 0x11, 0x04, 0x00, 0x00, 0x00]), WifiElement(id: 221, body: []),
        ])
        XCTAssertEqual(list.hints.networkCost?.level, .variable)
        XCTAssertEqual(parse([UInt8](repeating: 0, count: 4096)).elements.count, 2048, "the most elements: all empty")
    }

    func testApplePersonalHotspot() {
        let hotspot = hints(Self.ssid + Self.rates + Self.rsn + Self.apple + Self.wmm)
        XCTAssertEqual(hotspot, WifiHints(applePersonalHotspot: true))
        XCTAssertEqual(hotspot.meteredState, .guessYes)
        XCTAssertTrue(hints([0xDD, 0x04, 0x00, 0x17, 0xF2, 0x06]).applePersonalHotspot, "no payload: the type is what counts")
        XCTAssertFalse(hints([0xDD, 0x03, 0x00, 0x17, 0xF2]).applePersonalHotspot, "no type")
        for type: UInt8 in [0x00, 0x01, 0x05, 0x07, 0x0B, 0x11] {
            XCTAssertEqual(hints([0xDD, 0x0A, 0x00, 0x17, 0xF2, type, 0x01, 0x01, 0x03, 0x03, 0x00, 0x00]), WifiHints(), "Apple type \(type)")
        }
    }

    func testBothHints() {
        let unrestricted = hints(Self.apple + Self.rsn + Self.networkCost(level: 1))
        XCTAssertEqual(unrestricted, WifiHints(networkCost: ConnectionCost(level: .unrestricted), applePersonalHotspot: true))
        XCTAssertEqual(unrestricted.meteredState, .guessNo, "the stated cost decides")
        XCTAssertEqual(hints(Self.networkCost(level: 2) + Self.apple).meteredState, .guessYes)
        XCTAssertEqual(hints(Self.networkCost(level: 0) + Self.apple).meteredState, .guessYes, "an unreadable cost leaves the Apple hint")
    }

    func testOtherVendorsTypesAndIDs() {
        let attribute: [UInt8] = [0x02, 0x00, 0x00, 0x00]
        let others: [([UInt8], String)] = [
            ([0xDD, 0x08, 0x00, 0x50, 0xF3, 0x11] + attribute, "OUI 00:50:F3"),
            ([0xDD, 0x08, 0x00, 0x17, 0xF2, 0x11] + attribute, "Apple's OUI, Network Cost's type"),
            ([0xDD, 0x08, 0x50, 0x6F, 0x9A, 0x11] + attribute, "Wi-Fi Alliance"),
            ([0xDD, 0x08, 0x00, 0x50, 0xF2, 0x02] + attribute, "Microsoft's OUI, WMM's type"),
            ([0xDD, 0x08, 0x00, 0x50, 0xF2, 0x04] + attribute, "Microsoft's OUI, WPS's type"),
            ([0xDD, 0x08, 0x00, 0x50, 0xF2, 0x12] + attribute, "Microsoft's OUI, type 0x12"),
            ([0xDE, 0x08, 0x00, 0x50, 0xF2, 0x11] + attribute, "Network Cost's body under id 222"),
            ([0x11, 0x08, 0x00, 0x50, 0xF2, 0x11] + attribute, "Network Cost's body under id 17"),
            ([0x00, 0x0A] + Self.apple.dropFirst(2), "Apple's body as an SSID"),
            ([0x00, 0x0C] + Self.networkCost(level: 2) + [0x00, 0x00], "a Network Cost element inside an SSID"),
        ]
        for (bytes, what) in others {
            XCTAssertEqual(hints(bytes), WifiHints(), what)
        }
    }

    func testOversizedInput() {
        let padding = (0..<16).flatMap { _ in [0xDE, 0xFD] + [UInt8](repeating: 0x5A, count: 253) }
        let exactly = padding + Self.networkCost(level: 2) + [0x2D, 0x04, 0x00, 0x00, 0x00, 0x00]
        XCTAssertEqual(exactly.count, WifiElements.maximumSize)
        XCTAssertEqual(parse(exactly).elements.count, 18)
        XCTAssertEqual(parse(exactly).hints.networkCost?.level, .fixed, "exactly the maximum is read")
        XCTAssertEqual(WifiElements.parse(exactly + [0x00]), .failure(.oversized(4097)))
        XCTAssertEqual(WifiElements.parse([UInt8](repeating: 0, count: 70_000)), .failure(.oversized(70_000)))
    }

    func testProblemDescribesItself() {
        XCTAssertEqual(
            WifiElementsProblem.oversized(5000).description, "Wi-Fi information elements too large (5000 bytes, at most 4096)")
    }
}
