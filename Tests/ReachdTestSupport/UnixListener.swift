import Foundation
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// A listening Unix socket for a test's fake daemon, bound at `path`; `serve` accepts on it from a thread of its
/// own. Shut down and closed when it goes, which ends a waiting accept.
package final class UnixListener: Sendable {
    /// Where it listens.
    package let path: String
    private let descriptor: Int32

    /// Binds a stream socket at `path` (in a directory the test made, without a file there yet) and listens.
    package init(path: String, backlog: Int32 = 1) throws {
        self.path = path
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard listener >= 0, path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else {
            if listener >= 0 { close(listener) }
            throw POSIXError(.EADDRNOTAVAIL)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, backlog) == 0 else {
            close(listener)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        descriptor = listener
    }

    deinit {
        shutdown(descriptor, Int32(SHUT_RDWR))
        close(descriptor)
    }

    /// Accepts connections on a thread of its own and hands each to `connection` with its number (from 1); the
    /// descriptor is `connection`'s to close. Accepts the next while `connection` returns true and the listener lives.
    package func serve(_ connection: @escaping @Sendable (_ client: Int32, _ number: Int) -> Bool) {
        let listener = descriptor  // Not `self`: the thread must not keep the listener alive.
        Thread.detachNewThread {
            var number = 0
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                number += 1
                guard connection(client, number) else { return }
            }
        }
    }

    /// Serves one connection, as a fake daemon that answers once: reads its request line, sends `reply`, and closes
    /// the connection once `leave` is signalled.
    package func answerOnce(with reply: [UInt8], closingOn leave: DispatchSemaphore) {
        serve { client, _ in
            Self.skipLine(on: client)
            Self.send(reply, on: client)
            leave.wait()
            close(client)
            return false
        }
    }

    /// Reads `client` up to and including the first newline: a request line the fake daemon does not look at.
    package static func skipLine(on client: Int32) {
        var byte: UInt8 = 0
        while read(client, &byte, 1) == 1, byte != UInt8(ascii: "\n") {}
    }

    /// Sends all of `bytes` on `client`; a client that went away ends it quietly.
    package static func send(_ bytes: [UInt8], on client: Int32) {
        try? SystemCall.sendAll(bytes, on: client)
    }
}
