import Foundation
import XCTest

/// Debian's xdg-desktop-portal on a private session bus, its proxy settings GNOME's: glib-networking's GNOME resolver
/// (chosen with `XDG_CURRENT_DESKTOP=GNOME`) reads `org.gnome.system.proxy` from a GSettings keyfile the test writes.
final class DesktopPortal {
    static let binary = "/usr/libexec/xdg-desktop-portal"
    static let name = "org.freedesktop.portal.Desktop"

    let bus: PrivateBus
    private let directory: String
    private var portal: SpawnedProcess?

    /// Skips (saying why) without the portal or glib-networking; starts the private bus in `directory`/portal.
    init(directory: String) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else { throw XCTSkip("xdg-desktop-portal is not installed") }
        let modules = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/\(Self.multiarch)/gio/modules")) ?? []
        guard modules.contains("libgiognomeproxy.so") else { throw XCTSkip("glib-networking (GNOME's proxy resolver) is not installed") }
        self.directory = directory + "/portal"
        try FileManager.default.createDirectory(atPath: self.directory + "/config/glib-2.0/settings", withIntermediateDirectories: true)
        bus = try PrivateBus(directory: self.directory, policies: [])
    }

    /// Starts the portal with `settings`, a keyfile of `org.gnome.system.proxy`'s paths (`[system/proxy]`,
    /// `[system/proxy/http]`, …), and waits until it owns its name.
    func start(proxySettings settings: String) throws {
        try settings.write(toFile: directory + "/config/glib-2.0/settings/keyfile", atomically: true, encoding: .utf8)
        portal = try SpawnedProcess([Self.binary, "--replace"], environment: [
            "DBUS_SESSION_BUS_ADDRESS": bus.address, "XDG_CURRENT_DESKTOP": "GNOME", "GSETTINGS_BACKEND": "keyfile",
            "XDG_CONFIG_HOME": directory + "/config", "HOME": directory, "PATH": "/usr/bin:/bin",
        ], output: directory + "/portal.log")
        try bus.waitForOwner(of: Self.name)
    }

    func stop() {
        portal?.stop()
        portal = nil
        bus.stop()
    }

    private static var multiarch: String {
        #if arch(arm64)
        "aarch64-linux-gnu"
        #else
        "x86_64-linux-gnu"
        #endif
    }
}
