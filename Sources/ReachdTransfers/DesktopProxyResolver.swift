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
/// `org.freedesktop.portal.ProxyResolver.Lookup` on the session bus, of the portal that runs: it is never started
/// (activated) for a lookup, since a portal started before the session has set its desktop up reads the wrong settings
/// for the rest of the session. A lookup has a deadline (`timeoutMicroseconds`, and the same again on this side, should
/// the bus not answer at all) and ends when its task is cancelled; its answer is read within `DesktopProxy`'s bounds. A
/// portal that is not there, fails or is late gives no answer.
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
        let pending = PendingLookup()
        // A deadline that fires before the wait starts ends it at once (`PendingLookup.wait`); one that is not needed goes.
        let deadline = Task {
            try? await Task.sleep(for: .microseconds(Self.timeoutMicroseconds + 1_000_000))
            pending.resume(nil)
        }
        defer { deadline.cancel() }
        let entries = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                pending.wait(continuation)
                guard connection.perform({ bus in pending.send(url, on: bus) }) else { return pending.resume(nil) }
            }
        } onCancel: {
            pending.resume(nil)
        }
        return entries.map { DesktopProxy(answer: $0) }
    }
}

/// One lookup in flight, resumed exactly once: by its reply, a failure to send it, its slot going (the connection
/// closed before an answer), its deadline or its task's cancellation, whichever comes first.
private final class PendingLookup: Sendable {
    private enum State {
        case ready
        case waiting(CheckedContinuation<[String]?, Never>)
        case over
    }

    private let state = Mutex(State.ready)

    /// The caller waits; a lookup already over (cancelled before) resumes it at once.
    func wait(_ continuation: CheckedContinuation<[String]?, Never>) {
        let over = state.withLock { state -> Bool in
            guard case .ready = state else { return true }
            state = .waiting(continuation)
            return false
        }
        if over { continuation.resume(returning: nil) }
    }

    func resume(_ entries: [String]?) {
        let waiting = state.withLock { state -> CheckedContinuation<[String]?, Never>? in
            defer { state = .over }
            if case .waiting(let continuation) = state { return continuation }
            return nil
        }
        waiting?.resume(returning: entries)
    }

    /// Sends the call on the bus thread; the slot, floating, holds this lookup until the reply or the connection ends.
    func send(_ url: String, on bus: OpaquePointer) {
        var message: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &message, DesktopProxyResolver.portal, DesktopProxyResolver.path,
                                             DesktopProxyResolver.interface, "Lookup") >= 0, let message else { return resume(nil) }
        defer { sd_bus_message_unref(message) }
        guard sd_bus_message_set_auto_start(message, 0) >= 0,
              url.withCString({ sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }) >= 0 else { return resume(nil) }
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
