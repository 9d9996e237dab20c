import CSystemd
import Logging
import ReachdModel
#if canImport(Glibc)
import Glibc
#endif

/// Writing sd-bus messages with the non-variadic calls (Swift cannot call `sd_bus_message_append`).
package enum BusMessage {
    /// One `a{sv}`.
    package typealias Dictionary = [(String, BusService.PropertyValue)]

    /// A method call kept until its reply is sent from the bus thread.
    package final class Retained: @unchecked Sendable {
        package let pointer: OpaquePointer
        package init(_ pointer: OpaquePointer) { self.pointer = sd_bus_message_ref(pointer) }
        package func release() { sd_bus_message_unref(pointer) }
    }

    package static func append(_ value: BusService.PropertyValue, to message: OpaquePointer) -> Int32 {
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
        }
    }

    /// The host verdict as `a{sv}`.
    static func dictionary(of stamped: StampedVerdict) -> Dictionary {
        let verdict = stamped.verdict
        return [
            ("Target", .string(verdict.target)),
            ("Reachable", .bool(verdict.reachable)),
            ("Status", .string(verdict.status.rawValue)),
            ("Metered", .bool(verdict.metered)),
            ("MeteredReason", .string(verdict.meteredReason ?? "")),
            ("Interface", .string(verdict.interface ?? "")),
            ("Flags", .strings(verdict.flags.names)),
            ("Reason", .string(verdict.reason ?? "")),
            ("ReasonCode", .string(verdict.reasonCode?.rawValue ?? "")),
            ("Addresses", .strings((verdict.addresses ?? []).map(\.description))),
            ("Sequence", .uint64(stamped.sequence)),
        ]
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

    /// Replies to `call` with a D-Bus error; returns what sd-bus expects from a method handler.
    package static func replyError(_ call: OpaquePointer, name: String, message: String) -> Int32 {
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        _ = sd_bus_error_set(&error, name, message)
        return sd_bus_reply_method_error(call, &error)
    }
}
