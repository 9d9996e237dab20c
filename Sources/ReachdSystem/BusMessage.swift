import CSystemd
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Writing sd-bus messages with the non-variadic calls (Swift cannot call `sd_bus_message_append`).
package enum BusMessage {
    /// One `a{sv}`.
    package typealias Dictionary = [(String, Value)]

    /// One value of an `a{sv}`.
    package enum Value: Equatable, Sendable {
        case bool(Bool)
        case string(String)
        case strings([String])
        case uint32(UInt32)
        case uint64(UInt64)
        case int64(Int64)
        /// An object path (`o`).
        case objectPath(String)
        /// Object paths (`ao`).
        case objectPaths([String])
        /// Two numbers (`(uu)`), such as NetworkManager's state and reason.
        case uint32Pair(UInt32, UInt32)

        /// The D-Bus signature.
        package var signature: String {
            switch self {
            case .bool: "b"
            case .string: "s"
            case .strings: "as"
            case .uint32: "u"
            case .uint64: "t"
            case .int64: "x"
            case .objectPath: "o"
            case .objectPaths: "ao"
            case .uint32Pair: "(uu)"
            }
        }
    }

    /// A method call kept until its reply is sent from the bus thread.
    package final class Retained: @unchecked Sendable {
        package let pointer: OpaquePointer
        package init(_ pointer: OpaquePointer) { self.pointer = sd_bus_message_ref(pointer) }
        package func release() { sd_bus_message_unref(pointer) }
    }

    package static func append(_ value: Value, to message: OpaquePointer) -> Int32 {
        switch value {
        case .bool(let flag):
            var int: Int32 = flag ? 1 : 0
            return sd_bus_message_append_basic(message, CChar(UInt8(ascii: "b")), &int)
        case .string(let text):
            return text.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }
        case .uint32(var number):
            return sd_bus_message_append_basic(message, CChar(UInt8(ascii: "u")), &number)
        case .uint64(var number):
            return sd_bus_message_append_basic(message, CChar(UInt8(ascii: "t")), &number)
        case .int64(var number):
            return sd_bus_message_append_basic(message, CChar(UInt8(ascii: "x")), &number)
        case .strings(let texts):
            var rc = sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), "s")
            for text in texts where rc >= 0 {
                rc = text.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }
            }
            return rc >= 0 ? sd_bus_message_close_container(message) : rc
        case .objectPath(let path):
            return path.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "o")), $0) }
        case .uint32Pair(var first, var second):
            var rc = sd_bus_message_open_container(message, CChar(UInt8(ascii: "r")), "uu")
            if rc >= 0 { rc = sd_bus_message_append_basic(message, CChar(UInt8(ascii: "u")), &first) }
            if rc >= 0 { rc = sd_bus_message_append_basic(message, CChar(UInt8(ascii: "u")), &second) }
            return rc >= 0 ? sd_bus_message_close_container(message) : rc
        case .objectPaths(let paths):
            var rc = sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), "o")
            for path in paths where rc >= 0 {
                rc = path.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "o")), $0) }
            }
            return rc >= 0 ? sd_bus_message_close_container(message) : rc
        }
    }

    /// Appends one `a{sv}`.
    package static func append(_ entries: Dictionary, to message: OpaquePointer) -> Int32 {
        var rc = sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), "{sv}")
        for (key, value) in entries where rc >= 0 {
            rc = sd_bus_message_open_container(message, CChar(UInt8(ascii: "e")), "sv")
            if rc >= 0 { rc = append(.string(key), to: message) }
            if rc >= 0 { rc = sd_bus_message_open_container(message, CChar(UInt8(ascii: "v")), value.signature) }
            if rc >= 0 { rc = append(value, to: message) }
            if rc >= 0 { rc = sd_bus_message_close_container(message) }
            if rc >= 0 { rc = sd_bus_message_close_container(message) }
        }
        return rc >= 0 ? sd_bus_message_close_container(message) : rc
    }

    /// Sends the method return of `call` carrying one `a{sv}`.
    package static func reply(_ call: OpaquePointer, with entries: Dictionary, on bus: OpaquePointer, logger: Logger) {
        reply(call, on: bus, logger: logger) { append(entries, to: $0) }
    }

    /// Sends the method return of `call` carrying `aa{sv}`.
    package static func reply(_ call: OpaquePointer, with list: [Dictionary], on bus: OpaquePointer, logger: Logger) {
        reply(call, on: bus, logger: logger) { message in
            var rc = sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), "a{sv}")
            for entries in list where rc >= 0 { rc = append(entries, to: message) }
            return rc >= 0 ? sd_bus_message_close_container(message) : rc
        }
    }

    /// Sends the method return of `call` carrying one value.
    package static func reply(_ call: OpaquePointer, with value: Value, on bus: OpaquePointer, logger: Logger) {
        reply(call, on: bus, logger: logger) { append(value, to: $0) }
    }

    private static func reply(_ call: OpaquePointer, on bus: OpaquePointer, logger: Logger, body: (OpaquePointer) -> Int32) {
        var reply: OpaquePointer?
        guard sd_bus_message_new_method_return(call, &reply) >= 0, let reply else { return }
        defer { sd_bus_message_unref(reply) }
        var rc = body(reply)
        if rc >= 0 { rc = sd_bus_send(bus, reply, nil) }
        if rc < 0 {
            let member = sd_bus_message_get_member(call).map { String(cString: $0) } ?? "?"
            logger.warning("D-Bus: cannot reply to \(member): \(String(cString: strerror(-rc)))")
        }
    }

    /// The uid and primary gid of the peer that sent `call`, as the bus daemon took them from the kernel
    /// (effective, else real; `gid` nil where the bus records none); nil when the bus reports no uid.
    package static func senderIDs(of call: OpaquePointer) -> (uid: UInt32, gid: UInt32?)? {
        var creds: OpaquePointer?
        let mask = UInt64(SD_BUS_CREDS_EUID) | UInt64(SD_BUS_CREDS_UID) | UInt64(SD_BUS_CREDS_EGID) | UInt64(SD_BUS_CREDS_GID)
        guard sd_bus_query_sender_creds(call, mask, &creds) >= 0, let creds else { return nil }
        defer { sd_bus_creds_unref(creds) }
        var uid = uid_t(), gid = gid_t()
        guard sd_bus_creds_get_euid(creds, &uid) >= 0 || sd_bus_creds_get_uid(creds, &uid) >= 0 else { return nil }
        let hasGID = sd_bus_creds_get_egid(creds, &gid) >= 0 || sd_bus_creds_get_gid(creds, &gid) >= 0
        return (UInt32(uid), hasGID ? UInt32(gid) : nil)
    }

    /// Replies to `call` with a D-Bus error; returns what sd-bus expects from a method handler.
    package static func replyError(_ call: OpaquePointer, name: String, message: String) -> Int32 {
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        _ = sd_bus_error_set(&error, name, message)
        return sd_bus_reply_method_error(call, &error)
    }
}
