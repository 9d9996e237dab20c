/// Which D-Bus bus a service uses (`--bus`, `--networkmanager`): the system bus, the session bus
/// (`DBUS_SESSION_BUS_ADDRESS`), or none.
public enum Bus: String, Sendable, CaseIterable {
    case system, session, none
}
