import Foundation
import XCTest
@testable import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// The system-call funnel and the descriptor that closes itself.
final class SystemCallTests: XCTestCase {
    /// An interrupted call is made again until it answers; its answer is returned.
    func testAnInterruptedCallIsMadeAgain() throws {
        var calls = 0
        let answer = try SystemCall.retrying("fake") { () -> Int in
            calls += 1
            guard calls > 2 else { errno = EINTR; return -1 }
            return 7
        }
        XCTAssertEqual(answer, 7)
        XCTAssertEqual(calls, 3)
    }

    /// Any other failure is thrown once, with the call's name and its errno.
    func testAFailureCarriesTheCallAndItsErrno() {
        var calls = 0
        XCTAssertThrowsError(try SystemCall.retrying("read(-1)") { () -> Int in
            calls += 1
            var byte: UInt8 = 0
            return read(-1, &byte, 1)
        }) { error in
            XCTAssertEqual(error as? SystemCallError, SystemCallError(call: "read(-1)", errno: Errno(EBADF)))
        }
        XCTAssertEqual(calls, 1)
        XCTAssertEqual(SystemCallError(call: "read", errno: Errno(EBADF)).description, "read: Bad file descriptor")
    }

    /// The `Result` form says the same, for calls inside `withUnsafe…` closures.
    func testTheResultFormCarriesTheSameError() {
        var buffer = [UInt8](repeating: 0, count: 4)
        let result = buffer.withUnsafeMutableBytes { space in SystemCall.result("recv") { recv(-1, space.baseAddress, space.count, 0) } }
        XCTAssertEqual(result, .failure(SystemCallError(call: "recv", errno: Errno(EBADF))))
    }

    /// A descriptor is closed when its owner goes away, and not before.
    func testAnOwnedDescriptorClosesItselfOnce() throws {
        var raw: Int32 = -1
        do {
            let file = try OwnedDescriptor.open("/dev/null", O_RDONLY)
            raw = file.raw
            XCTAssertNotEqual(fcntl(raw, F_GETFD), -1, "open while its owner lives")
            XCTAssertNotEqual(fcntl(raw, F_GETFD) & FD_CLOEXEC, 0, "close-on-exec")
            var byte: UInt8 = 0
            XCTAssertEqual(try withUnsafeMutableBytes(of: &byte) { try file.read(into: $0) }, 0, "end of file")
        }
        XCTAssertEqual(fcntl(raw, F_GETFD), -1, "closed when its owner went away")
        XCTAssertEqual(errno, EBADF)
    }

    /// Opening what is not there throws the call with the path and ENOENT.
    func testOpeningAMissingFileSaysWhich() {
        XCTAssertThrowsError(try OwnedDescriptor.open("/nonexistent/reachd", O_RDONLY).raw) { error in
            XCTAssertEqual(error as? SystemCallError, SystemCallError(call: "open(/nonexistent/reachd)", errno: Errno(ENOENT)))
        }
    }

    /// SmallFile reads through the funnel: the whole file under the limit, at least the limit over it.
    func testSmallFileReadsUpToItsLimit() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("reachd-small-\(getpid())").path
        defer { unlink(path) }
        let content = [UInt8](repeating: 0x61, count: 10_000)
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(content)))
        XCTAssertEqual(SmallFile.bytes(at: path, limit: 20_000), content)
        XCTAssertEqual(SmallFile.bytes(at: path, limit: 5_000)?.count, 8192, "whole 4 KiB chunks until past the limit")
        XCTAssertNil(SmallFile.bytes(at: path + ".missing", limit: 10))
    }
}
