import ReachdConfig
import XCTest

final class TOMLParserTests: XCTestCase {
    func testDocument() throws {
        let doc = try TOMLParser.parse("""
            # comment
            title = "reach\\td \\u00e9"   # trailing comment
            literal = 'C:\\path'
            count = 1_000
            hex = 0x10
            ratio = -0.5
            on = true
            list = [ "a",
                     "b", ]   # multi-line, trailing comma
            "quoted key" = 1
            a.b = 2

            [downloads]
            metered_threshold = 10485760

            [[interface]]
            match = "usb*"
            [[interface]]
            match = "eth0"
            metered = false
            """)
        XCTAssertEqual(doc["title"], .string("reach\td é"))
        XCTAssertEqual(doc["literal"], .string("C:\\path"))
        XCTAssertEqual(doc["count"], .integer(1000))
        XCTAssertEqual(doc["hex"], .integer(16))
        XCTAssertEqual(doc["ratio"], .float(-0.5))
        XCTAssertEqual(doc["on"], .bool(true))
        XCTAssertEqual(doc["list"], .array([.string("a"), .string("b")]))
        XCTAssertEqual(doc["quoted key"], .integer(1))
        XCTAssertEqual(doc["a"]?.table?["b"], .integer(2))
        XCTAssertEqual(doc["downloads"]?.table?["metered_threshold"], .integer(10_485_760))
        let interfaces = try XCTUnwrap(doc["interface"]?.array)
        XCTAssertEqual(interfaces.count, 2)
        XCTAssertEqual(interfaces[1].table?["match"], .string("eth0"))
        XCTAssertEqual(interfaces[1].table?["metered"], .bool(false))
        XCTAssertEqual(interfaces[1].table?.keys, ["match", "metered"])
        XCTAssertEqual(doc.keys, ["title", "literal", "count", "hex", "ratio", "on", "list", "quoted key", "a", "downloads", "interface"])
    }

    func testErrorsCarryTheLine() {
        let table: [(String, Int, String)] = [
            ("a = 1\nb = \"open\n", 2, "unterminated string"),
            ("a = 1\na = 2", 2, "defined twice"),
            ("[t]\n[t]", 2, "defined twice"),
            ("x = yes", 1, "strings need quotes"),
            ("x = 1 2", 1, "unexpected text"),
            ("x = [1, 2", 1, "expected , or ]"),
            ("x = {a = 1}", 1, "inline tables"),
            ("x = \"\"\"multi\"\"\"", 1, "multi-line strings"),
            ("d = 2026-11-22", 1, "dates are not supported"),
            ("\n\n= 3", 3, "expected a key"),
            ("[[a]\n", 1, "expected ]]"),
            ("a = 1\n[a.b]", 2, "a is a value"),
            ("s = \"\\q\"", 1, "unknown escape"),
        ]
        for (text, line, fragment) in table {
            XCTAssertThrowsError(try TOMLParser.parse(text), text) { error in
                guard let error = error as? TOMLError else { return XCTFail("\(error)") }
                XCTAssertEqual(error.line, line, text)
                XCTAssertTrue(error.message.contains(fragment), "\(error.message) does not say \(fragment)")
            }
        }
    }
}
