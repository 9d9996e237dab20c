import CSystemd
import Logging
import ReachdServiceKit
import ReachdSystem
import ReachdTransferModel
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The desktop's proxy settings (GNOME's, KDE's, a PAC script), asked per URL of xdg-desktop-portal's
/// `org.freedesktop.portal.ProxyResolver.Lookup` on the session bus. A lookup has a deadline (`timeoutMicroseconds`)
/// and its answer is read within `DesktopProxy`'s bounds; a portal that is not there, fails or is late gives no answer.
final class DesktopProxyResolver: StartedComponent {
    static let portal = "org.freedesktop.portal.Desktop"
    static let path = "/org/freedesktop/portal/desktop"
    static let interface = "org.freedesktop.portal.ProxyResolver"
    /// A PAC script may take a moment; the portal caches nothing.
    static let timeoutMicroseconds: UInt64 = 5_000_000

    private let connection: BusConnection

    /// Connects to `bus` and starts its thread.
    init(bus: Bus) throws {
        connection = try BusConnection(bus)
        do {
            try connection.start()
        } catch {
            connection.stop()
            throw error
        }
    }

    func stop() async {
        connection.stop()
    }

    /// The resolver on `which` bus, or nil (logged) for `none` and a bus that cannot be used.
    static func start(on which: Bus, logger: Logger) -> DesktopProxyResolver? {
        guard which != .none else { return nil }
        do {
            let resolver = try DesktopProxyResolver(bus: which)
            logger.info("transfers ask the desktop's proxy settings (xdg-desktop-portal's ProxyResolver on the \(which.rawValue) bus) per job")
            return resolver
        } catch {
            logger.warning("proxies: the \(which.rawValue) bus cannot be used (\(error)); the desktop's proxy settings are not asked")
            return nil
        }
    }

    /// What the desktop's settings say for `url`; nil when the portal gave no answer.
    func lookup(_ url: String) async -> DesktopProxy? {
        let entries = await withCheckedContinuation { continuation in
            let pending = PendingLookup(continuation)
            connection.perform { bus in pending.send(url, on: bus) }
        }
        return entries.map { DesktopProxy(answer: $0) }
    }
}

/// One lookup in flight, resumed exactly once: by its reply, by a failure to send it, or when its slot goes (the
/// connection closed before an answer).
private final class PendingLookup: Sendable {
    private let continuation: Mutex<CheckedContinuation<[String]?, Never>?>

    init(_ continuation: CheckedContinuation<[String]?, Never>) {
        self.continuation = Mutex(continuation)
    }

    func resume(_ entries: [String]?) {
        continuation.withLock { $0.take() }?.resume(returning: entries)
    }

    /// Sends the call on the bus thread; the slot, floating, holds this lookup until the reply or the connection ends.
    func send(_ url: String, on bus: OpaquePointer) {
        var message: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &message, DesktopProxyResolver.portal, DesktopProxyResolver.path,
                                             DesktopProxyResolver.interface, "Lookup") >= 0, let message else { return resume(nil) }
        defer { sd_bus_message_unref(message) }
        guard url.withCString({ sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }) >= 0 else { return resume(nil) }
        let context = Unmanaged.passRetained(self).toOpaque()
        var slot: OpaquePointer?
        guard sd_bus_call_async(bus, &slot, message, lookupAnswered, context, DesktopProxyResolver.timeoutMicroseconds) >= 0,
              let slot else {
            Unmanaged<PendingLookup>.fromOpaque(context).release()
            return resume(nil)
        }
        _ = sd_bus_slot_set_destroy_callback(slot, lookupSlotGone)
        _ = sd_bus_slot_set_floating(slot, 1)
        sd_bus_slot_unref(slot)
    }

    /// The reply's proxy URIs (`as`), at most `DesktopProxy.maximumEntries`, each cut after one byte more than
    /// `DesktopProxy.maximumEntryBytes` (which `DesktopProxy` then refuses); nil for an error or another type.
    static func entries(of reply: OpaquePointer) -> [String]? {
        guard sd_bus_message_is_method_error(reply, nil) == 0,
              sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "a")), "s") > 0 else { return nil }
        var entries: [String] = []
        while entries.count < DesktopProxy.maximumEntries {
            var text: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "s")), &text) > 0, let text else { break }
            let length = strnlen(text, DesktopProxy.maximumEntryBytes + 1)
            entries.append(text.withMemoryRebound(to: UInt8.self, capacity: length) {
                String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
            })
        }
        return entries
    }
}

private let lookupAnswered: sd_bus_message_handler_t = { reply, context, _ in
    guard let context else { return 0 }
    let pending = Unmanaged<PendingLookup>.fromOpaque(context).takeUnretainedValue()
    pending.resume(reply.flatMap { PendingLookup.entries(of: $0) })
    return 0
}

/// The slot is freed (after its reply, or with the connection): an unanswered lookup ends without an answer.
private let lookupSlotGone: sd_bus_destroy_t = { context in
    guard let context else { return }
    let pending = Unmanaged<PendingLookup>.fromOpaque(context).takeRetainedValue()
    pending.resume(nil)
}
