import ReachdModel
import XCTest

/// Text from servers and other users, made safe for a terminal: every control character escaped, nothing else changed.
final class TerminalTextTests: XCTestCase {
    func testControlCharactersAreEscapedVisibly() {
        XCTAssertEqual("\u{1b}]52;c;cm0gLXJmIH4K\u{07}".terminalSafe, "\\x1b]52;c;cm0gLXJmIH4K\\x07", "OSC 52 sets the clipboard")
        XCTAssertEqual("\u{1b}]0;title\u{1b}\\".terminalSafe, "\\x1b]0;title\\x1b\\", "OSC 0 sets the title")
        XCTAssertEqual("a\u{0}b\tc\nd\re\u{7f}".terminalSafe, "a\\x00b\\x09c\\x0ad\\x0de\\x7f")
        XCTAssertEqual("\u{9b}31m \u{80} \u{85} \u{9f}".terminalSafe, "\\u{9b}31m \\u{80} \\u{85} \\u{9f}", "C1: CSI, NEL")
        XCTAssertEqual("x\u{202e}gpj.exe\u{2066}\u{200f}".terminalSafe, "x\\u{202e}gpj.exe\\u{2066}\\u{200f}", "bidi controls")
        XCTAssertEqual("one\u{2028}two\u{2029}".terminalSafe, "one\\u{2028}two\\u{2029}")
    }

    func testEverythingElseIsKept() {
        for text in ["", "plain /srv/out/file.bin -> https://mirror.test/a?b=c", "Ünïcode 日本語 👩‍👩‍👧 é", "back\\slash \\x1b as text", "\u{a0}\u{ad}\u{ff}"] {
            XCTAssertEqual(text.terminalSafe, text)
        }
    }

    /// Every scalar below U+00A0 that is not printable ASCII is escaped: no byte of the result is a C0 control or
    /// DEL, and no scalar a C1 control.
    func testNoControlCharacterSurvives() {
        let all = String(String.UnicodeScalarView((0..<0xa0).compactMap(Unicode.Scalar.init)))
        let safe = all.terminalSafe
        XCTAssertFalse(safe.unicodeScalars.contains { $0.value < 0x20 || (0x7f..<0xa0).contains($0.value) })
        XCTAssertTrue(safe.contains(String(all.unicodeScalars.filter { (0x20..<0x7f).contains($0.value) })), "printable ASCII kept")
    }
}
