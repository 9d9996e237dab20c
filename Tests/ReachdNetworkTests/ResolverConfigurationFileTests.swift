import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import ReachdNetwork
import ReachdSystem
import XCTest

/// resolv.conf's rule (a `nameserver` line with an address) and the file followed with inotify: written in
/// place, replaced by a rename, removed, and as a symbolic link into another directory (systemd-resolved's).
final class ResolverConfigurationFileTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = try TestNetwork.temporaryDirectory()
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func testANameServerIsANameserverLineWithAnAddress() {
        XCTAssertTrue(ResolverConfiguration.namesNameServer(Array("nameserver 192.0.2.53\n".utf8)))
        XCTAssertTrue(ResolverConfiguration.namesNameServer(Array("# generated\nsearch lan\r\nnameserver\t2001:db8::53\r\n".utf8)))
        XCTAssertFalse(ResolverConfiguration.namesNameServer(Array("nameserver\n".utf8)))
        XCTAssertFalse(ResolverConfiguration.namesNameServer(Array("#nameserver 192.0.2.53\n; nameserver 192.0.2.53\n".utf8)))
        XCTAssertFalse(ResolverConfiguration.namesNameServer(Array("nameservers 192.0.2.53\noptions edns0\n".utf8)))
        XCTAssertFalse(ResolverConfiguration.namesNameServer([UInt8]()))
    }

    func testFollowsWritesRenamesAndRemovals() throws {
        let path = directory + "/resolv.conf"
        let received = Received<Bool>()
        let file = try FollowedFile(path: path, read: ResolverConfiguration.namesNameServer(at:)) { received.append($0) }
        try file.start()
        defer { file.stop() }
        XCTAssertEqual(received.all, [false])

        try write("nameserver 192.0.2.53\n", inPlaceAt: path)
        XCTAssertTrue(received.wait { $0 == [false, true] }, "\(received.all)")
        try write("search lan\n", inPlaceAt: path)
        XCTAssertTrue(received.wait { $0 == [false, true, false] }, "\(received.all)")
        try "nameserver 192.0.2.53\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertTrue(received.wait { $0 == [false, true, false, true] }, "\(received.all)")
        try FileManager.default.removeItem(atPath: path)
        XCTAssertTrue(received.wait { $0 == [false, true, false, true, false] }, "\(received.all)")
    }

    /// `/etc/resolv.conf` → `/run/systemd/resolve/stub-resolv.conf`: the target's directory appears later, the
    /// target is replaced by a rename there, and the link is pointed elsewhere.
    func testFollowsASymbolicLinkIntoADirectoryThatAppearsLater() throws {
        let path = directory + "/etc/resolv.conf"
        try FileManager.default.createDirectory(atPath: directory + "/etc", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "../run/resolve/stub-resolv.conf")
        let received = Received<Bool>()
        let file = try FollowedFile(path: path, read: ResolverConfiguration.namesNameServer(at:)) { received.append($0) }
        try file.start()
        defer { file.stop() }
        XCTAssertEqual(received.all, [false])

        try FileManager.default.createDirectory(atPath: directory + "/run/resolve", withIntermediateDirectories: true)
        try "nameserver 127.0.0.53\n".write(toFile: directory + "/run/resolve/stub-resolv.conf", atomically: true, encoding: .utf8)
        XCTAssertTrue(received.wait { $0 == [false, true] }, "\(received.all)")
        try "options edns0\n".write(toFile: directory + "/run/resolve/stub-resolv.conf", atomically: true, encoding: .utf8)
        XCTAssertTrue(received.wait { $0 == [false, true, false] }, "\(received.all)")

        try "nameserver 192.0.2.53\n".write(toFile: directory + "/run/resolve/resolv.conf", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: directory + "/etc/.resolv.conf.new", withDestinationPath: directory + "/run/resolve/resolv.conf")
        XCTAssertEqual(rename(directory + "/etc/.resolv.conf.new", path), 0)
        XCTAssertTrue(received.wait { $0 == [false, true, false, true] }, "\(received.all)")
        try write("search lan\n", inPlaceAt: directory + "/run/resolve/resolv.conf")
        XCTAssertTrue(received.wait { $0 == [false, true, false, true, false] }, "\(received.all)")
    }

    /// A link target's directories made at once while the watches are re-armed (`mkdir -p` then the file, as
    /// systemd-resolved does at boot): whichever step the re-arming meets, the file is seen. Repeated, since a
    /// directory made between looking for it and watching its parent was missed in about one round of 300.
    func testADirectoryMadeWhileTheWatchesAreArmedIsNotMissed() throws {
        for round in 0..<1000 {
            let root = directory + "/\(round)"
            let path = root + "/etc/resolv.conf"
            try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "../run/a/b/c/resolv.conf")
            let received = Received<Bool>()
            let file = try FollowedFile(path: path, read: ResolverConfiguration.namesNameServer(at:)) { received.append($0) }
            try file.start()
            defer { file.stop() }
            try FileManager.default.createDirectory(atPath: root + "/run/a/b/c", withIntermediateDirectories: true)
            try write("nameserver 192.0.2.53\n", inPlaceAt: root + "/run/a/b/c/resolv.conf")
            guard received.wait(timeout: 10, until: { $0 == [false, true] }) else {
                return XCTFail("round \(round): \(received.all)")
            }
        }
    }

    /// Creates or truncates the file itself and writes it (an editor, `echo >`): one IN_CLOSE_WRITE.
    private func write(_ text: String, inPlaceAt path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard Glibc.write(fd, bytes, bytes.count) == bytes.count else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }
}
