import ReachdModel
import XCTest

final class BootIdentityTests: XCTestCase {
    private let kernel = "3f2a9c01-d4e8-4b7a-9c2d-0123456789ab"

    func testTheKernelsFileWinsAndSystemdsFormReadsTheSame() {
        XCTAssertEqual(BootIdentity.current(kernelFile: kernel + "\n", environment: "ffffffffffffffffffffffffffffffff"), kernel)
        XCTAssertEqual(BootIdentity.current(kernelFile: nil, environment: "3F2A9C01D4E84B7A9C2D0123456789AB"), kernel,
                       "systemd's %b, where the sandbox hides the file")
    }

    func testWhatIsNoBootIDIsNone() {
        for text in [nil, "", "unknown", "3f2a9c01", "3f2a9c01-d4e8-4b7a-9c2d-0123456789abcd", "zz2a9c01-d4e8-4b7a-9c2d-0123456789ab",
                     "00000000-0000-0000-0000-000000000000", "%b"] as [String?] {
            XCTAssertNil(BootIdentity.current(kernelFile: text, environment: nil), "\(text ?? "nil")")
        }
        XCTAssertNil(BootIdentity.current(kernelFile: "bad", environment: "also bad"))
    }
}
