import CSystemd
import ReachdSystem

/// Calls to one service on a bus and the reading of its replies with sd-bus, for the readers that follow a daemon
/// on D-Bus (ModemManager, iwd, wpa_supplicant). Every call waits at most `timeoutMicroseconds`; every failure is nil.
struct BusPeer {
    /// The service's well-known name.
    let service: String
    let timeoutMicroseconds: UInt64

    /// What a call came to: a reply (to unref), the service not there for this process (not on the bus, or its bus
    /// policy does not let this process ask it), or another failure (a timeout, an error reply, a malformed one).
    enum Answer<Value> {
        case value(Value)
        case serviceAbsent
        case failed

        /// The value; nil for either failure.
        var value: Value? {
            if case .value(let value) = self { return value }
            return nil
        }
    }

    /// A method call with string arguments. It never starts the service (auto-start off): a daemon that is not
    /// running is absent, not activated by a reader.
    func ask(_ bus: OpaquePointer, path: String, interface: String, member: String, arguments: [String] = []) -> Answer<OpaquePointer> {
        var message: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &message, service, path, interface, member) >= 0, let message,
              sd_bus_message_set_auto_start(message, 0) >= 0 else {
            message.map { _ = sd_bus_message_unref($0) }
            return .failed
        }
        defer { sd_bus_message_unref(message) }
        for argument in arguments {
            guard argument.withCString({ sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }) >= 0 else { return .failed }
        }
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        guard sd_bus_call(bus, message, timeoutMicroseconds, &error, &reply) >= 0, let reply else {
            let absent = ["ServiceUnknown", "NameHasNoOwner", "AccessDenied"].contains {
                sd_bus_error_has_name(&error, "org.freedesktop.DBus.Error." + $0) > 0
            }
            return absent ? .serviceAbsent : .failed
        }
        return .value(reply)
    }

    /// A method call with string arguments; the reply (to unref), or nil on any failure.
    func call(_ bus: OpaquePointer, path: String, interface: String, member: String, arguments: [String] = []) -> OpaquePointer? {
        ask(bus, path: path, interface: interface, member: member, arguments: arguments).value
    }

    /// `org.freedesktop.DBus.Properties.Get(interface, name)` of `contents` read by `read` (nil: malformed, `.failed`).
    func read<T>(_ bus: OpaquePointer, path: String, interface: String, name: String, _ contents: String,
                 _ read: (OpaquePointer) -> T?) -> Answer<T> {
        switch ask(bus, path: path, interface: "org.freedesktop.DBus.Properties", member: "Get", arguments: [interface, name]) {
        case .value(let reply):
            defer { sd_bus_message_unref(reply) }
            return Self.variant(reply, contents, read).map { .value($0) } ?? .failed
        case .serviceAbsent: return .serviceAbsent
        case .failed: return .failed
        }
    }

    /// `read(...)`'s value; nil on any failure.
    func property<T>(_ bus: OpaquePointer, path: String, interface: String, name: String, _ contents: String,
                     _ read: (OpaquePointer) -> T?) -> T? {
        self.read(bus, path: path, interface: interface, name: name, contents, read).value
    }

    /// Reads a variant holding `contents` with `read`; a variant of another type is skipped (nil).
    static func variant<T>(_ message: OpaquePointer, _ contents: String, _ read: (OpaquePointer) -> T?) -> T? {
        guard sd_bus_message_enter_container(message, CChar(UInt8(ascii: "v")), contents) > 0 else {
            _ = sd_bus_message_skip(message, "v")
            return nil
        }
        let value = read(message)
        _ = sd_bus_message_exit_container(message)
        return value
    }

    /// Walks the `a{sv}` the message is at: `read` gets each key and either reads the variant (true) or leaves
    /// it to be skipped (false). False when the dictionary is malformed.
    static func forEachProperty(_ message: OpaquePointer, _ read: (String) -> Bool) -> Bool {
        guard sd_bus_message_enter_container(message, CChar(UInt8(ascii: "a")), "{sv}") > 0 else { return false }
        while sd_bus_message_enter_container(message, CChar(UInt8(ascii: "e")), "sv") > 0 {
            var key: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &key) > 0, let key else { return false }
            if !read(String(cString: key)) {
                guard sd_bus_message_skip(message, "v") >= 0 else { return false }
            }
            guard sd_bus_message_exit_container(message) >= 0 else { return false }
        }
        return sd_bus_message_exit_container(message) >= 0
    }

    /// A string, object path or signature (`type` `s`, `o` or `g`) at the message's position, at most `limit` bytes.
    static func text(_ message: OpaquePointer, _ type: Character = "s", limit: Int = 4096) -> String? {
        var text: UnsafePointer<CChar>?
        guard let code = type.asciiValue, sd_bus_message_read_basic(message, CChar(code), &text) > 0, let text,
              strnlen(text, limit + 1) <= limit else { return nil }
        return String(cString: text)
    }

    /// A `u` at the message's position.
    static func uint32(_ message: OpaquePointer) -> UInt32? {
        var value: UInt32 = 0
        return sd_bus_message_read_basic(message, CChar(UInt8(ascii: "u")), &value) > 0 ? value : nil
    }

    /// The first `limit` paths of the object-path array (`ao`) at the message's position; nil when it is not one. The
    /// rest is left unread: the caller drops the reply.
    static func objectPaths(_ message: OpaquePointer, limit: Int) -> [String]? {
        guard sd_bus_message_enter_container(message, CChar(UInt8(ascii: "a")), "o") > 0 else { return nil }
        var paths: [String] = []
        while paths.count < limit, let path = text(message, "o") { paths.append(path) }
        return paths
    }

    /// A byte array (`ay`) at the message's position; nil when malformed or over `limit` bytes.
    static func bytes(_ message: OpaquePointer, limit: Int) -> [UInt8]? {
        var pointer: UnsafeRawPointer?
        var size = 0
        guard sd_bus_message_read_array(message, CChar(UInt8(ascii: "y")), &pointer, &size) >= 0, size <= limit else { return nil }
        guard let pointer, size > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: size))
    }

    /// Whether a PropertiesChanged signal (positioned after its interface name) changed or invalidated one of `names`.
    static func changes(_ message: OpaquePointer, any names: Set<String>) -> Bool {
        var relevant = false
        guard forEachProperty(message, { key in
            relevant = relevant || names.contains(key)
            return false
        }) else { return false }
        if !relevant, sd_bus_message_enter_container(message, CChar(UInt8(ascii: "a")), "s") > 0 {
            var name: UnsafePointer<CChar>?
            while !relevant, sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &name) > 0, let name {
                relevant = names.contains(String(cString: name))
            }
        }
        return relevant
    }
}

extension BusPeer {
    /// The match rule of the signal `member` of `interface` that `sender` sends, with `more` conditions
    /// (`,path_namespace='…'`, `,arg0='…'`).
    static func signal(from sender: String, _ interface: String, _ member: String, _ more: String = "") -> String {
        "type='signal',sender='\(sender)',interface='\(interface)',member='\(member)'\(more)"
    }

    /// What a reader of an ObjectManager service follows: PropertiesChanged of each of `interfaces` under `namespace`
    /// (to `properties`), InterfacesAdded and InterfacesRemoved (to `objects`), and the service's owner (to `owner`).
    static func objectManagerMatches(
        of service: String, under namespace: String, interfaces: [String], properties: sd_bus_message_handler_t,
        objects: sd_bus_message_handler_t, owner: sd_bus_message_handler_t
    ) -> [(rule: String, handler: sd_bus_message_handler_t)] {
        interfaces.sorted().map { interface in
            (signal(from: service, "org.freedesktop.DBus.Properties", "PropertiesChanged", ",path_namespace='\(namespace)',arg0='\(interface)'"),
             properties)
        } + [
            (signal(from: service, "org.freedesktop.DBus.ObjectManager", "InterfacesAdded"), objects),
            (signal(from: service, "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"), objects),
            (ownerChanged(of: service), owner),
        ]
    }

    /// The match rule of the bus's NameOwnerChanged for `service`: it appeared, left or changed hands.
    static func ownerChanged(of service: String) -> String {
        signal(from: "org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged", ",arg0='\(service)'")
    }
}

extension BusConnection {
    /// Adds each match rule with its handler, which gets `context`; stops the connection and throws when one
    /// cannot be added.
    func addMatches(_ matches: [(rule: String, handler: sd_bus_message_handler_t)], context: UnsafeMutableRawPointer) throws {
        do {
            for (rule, handler) in matches {
                try export({ bus, slot in sd_bus_add_match(bus, &slot, rule, handler, context) }, what: "sd_bus_add_match")
            }
        } catch {
            stop()
            throw error
        }
    }
}
