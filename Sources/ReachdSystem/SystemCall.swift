#if canImport(Glibc)
import Glibc
#endif

/// An `errno` value, typed: what a failed system call left in `errno`.
package struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: Int32

    package init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno` now.
    package static var current: Errno { Errno(errno) }

    package static let interrupted = Errno(EINTR)
    package static let wouldBlock = Errno(EAGAIN)

    /// `strerror`'s text.
    package var description: String { String(cString: strerror(rawValue)) }
}

/// A system call that failed: its name and the errno it left.
package struct SystemCallError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The call, e.g. `"read"`, or with what it acted on, e.g. `"open(/proc/stat)"`.
    package let call: String
    package let errno: Errno

    package init(call: String, errno: Errno) {
        self.call = call
        self.errno = errno
    }

    package var description: String { "\(call): \(errno)" }
}

/// The one funnel for system calls that report failure as -1 and `errno`: an interrupted call (EINTR) is made
/// again, any other failure is thrown with the call's name.
package enum SystemCall {
    /// `body`'s result once it is not interrupted; `name` names the call in the error. Inlinable, so that a hot
    /// caller (a subscriber's `send`) gets it specialized, with nothing allocated.
    @discardableResult @inlinable
    package static func retrying<Result: FixedWidthInteger>(_ name: @autoclosure () -> String,
                                                            _ body: () -> Result) throws(SystemCallError) -> Result {
        while true {
            let result = body()
            if result != -1 { return result }
            let error = Errno.current
            if error != .interrupted { throw SystemCallError(call: name(), errno: error) }
        }
    }

    /// The same as a `Result`, for calls made inside the standard library's `withUnsafe…` closures (which pass
    /// on no typed error): `try buffer.withUnsafeBytes { SystemCall.result("send") { … } }.get()`.
    @inlinable
    package static func result<Result: FixedWidthInteger>(_ name: @autoclosure () -> String,
                                                          _ body: () -> Result) -> Swift.Result<Result, SystemCallError> {
        Swift.Result { () throws(SystemCallError) in try retrying(name(), body) }
    }
}

extension SystemCall {
    /// Sends every byte of `bytes` on the socket `fd`, in order, in as many `send` calls as it takes: a short send is
    /// continued, an interrupted one made again. With `MSG_NOSIGNAL`, so a peer that closed is an `EPIPE` error,
    /// never a SIGPIPE. The first failure is thrown (`EPIPE`, `ECONNRESET`, `EAGAIN` on a non-blocking socket, …);
    /// what it means is the caller's to say.
    package static func sendAll(_ bytes: [UInt8], on fd: Int32) throws(SystemCallError) {
        var offset = 0
        while offset < bytes.count {
            offset += try bytes[offset...].withUnsafeBytes { pending in
                result("send") { Glibc.send(fd, pending.baseAddress, pending.count, Int32(MSG_NOSIGNAL)) }
            }.get()
        }
    }
}
