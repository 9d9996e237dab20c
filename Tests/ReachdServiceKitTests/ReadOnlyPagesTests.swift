import CReachdMemory
import ReachdServiceKit
import XCTest

/// Which pages are unmapped once a daemon serves: whole pages of read-only segments, never one shared with a neighbour.
final class ReadOnlyPagesTests: XCTestCase {
    private func wholePages(_ start: UInt, _ size: Int, pageSize: Int = 4096) -> Range<UInt>? {
        var first: UInt = 0, end: UInt = 0
        return reachd_whole_pages(start, size, pageSize, &first, &end) == 1 ? first..<end : nil
    }

    func testASegmentIsShrunkToTheWholePagesInsideIt() {
        XCTAssertEqual(wholePages(0x40_0000, 0x182_12c0), 0x40_0000..<0x1c2_1000,
                       "the code's last page, which the next segment may share, stays mapped")
        XCTAssertEqual(wholePages(0x1001, 0x2fff), 0x2000..<0x4000, "a segment that starts inside a page is released from the next one")
        XCTAssertEqual(wholePages(0x2000, 0x1000), 0x2000..<0x3000)
    }

    func testNoPageWhereNoneIsWhollyInsideOrTheRangeWrapsAround() {
        XCTAssertNil(wholePages(0x1010, 0x100))
        XCTAssertNil(wholePages(0x1000, 0))
        XCTAssertNil(wholePages(UInt.max - 0x1000, 0x2000), "past the end of the address space")
        XCTAssertNil(wholePages(UInt.max - 0x10, 0x8), "the next page boundary is past the end of the address space")
        XCTAssertNil(wholePages(0x1000, 0x4000, pageSize: 0))
    }

    /// This test process's code is unmapped and runs on: its pages come back from the page cache when touched.
    func testTheProcessRunsOnAfterItsReadOnlyPagesAreUnmapped() {
        XCTAssertGreaterThan(ReadOnlyPages.release(), 0, "the test program and its libraries have read-only segments")
        XCTAssertEqual(wholePages(0x1000, 0x1000), 0x1000..<0x2000)
        XCTAssertGreaterThan(ReadOnlyPages.release(), 0, "unmapped again after the code ran again")
    }
}
