import Foundation
import XCTest

/// How reachd-transfers ends when it cannot start: one clear line and exit status 1, never a crash of the
/// threads it had started.
final class TransferStartupIntegrationTests: XCTestCase {
    private var lab: TransferLab?

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    func testASocketPathThatCannotBeBoundEndsWithOneLineAndStatus1() throws {
        let lab = try TransferLab()
        self.lab = lab
        XCTAssertTrue(FileManager.default.createFile(atPath: lab.socketPath, contents: Data("not a socket".utf8)))
        // The crash it replaces came from threads still running at exit, so not every start showed it: three.
        for attempt in 1...3 {
            XCTAssertThrowsError(try lab.startDaemon(), "attempt \(attempt)") { error in
                let said = "\(error)"
                XCTAssertTrue(said.contains("reachd-transfers exited (1)"), "attempt \(attempt): \(said.suffix(3000))")
                XCTAssertTrue(said.contains("cannot listen on \(lab.socketPath): it exists and is not a socket"), "attempt \(attempt): \(said.suffix(3000))")
                XCTAssertFalse(said.contains("Fatal error") || said.contains("crashed"), "attempt \(attempt): \(said.suffix(3000))")
            }
        }
        XCTAssertEqual(try String(contentsOfFile: lab.socketPath, encoding: .utf8), "not a socket", "the file in the way is left alone")
    }
}
