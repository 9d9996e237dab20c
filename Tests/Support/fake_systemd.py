#!/usr/bin/env python3
"""systemd's GetUnitFileState on a private bus, for reachd's --networkmanager-face auto: owns
org.freedesktop.systemd1 on the bus at argv[1] and answers NetworkManager.service's state with argv[2], or, for
"not-found", with the error systemd gives for a unit it does not know (FileNotFound). Prints "ready" once it owns
the name; runs until killed."""
import sys
from gi.repository import Gio, GLib

address, state = sys.argv[1], sys.argv[2]
INTERFACE = """<node><interface name="org.freedesktop.systemd1.Manager">
<method name="GetUnitFileState"><arg type="s" direction="in"/><arg type="s" direction="out"/></method>
</interface></node>"""


def call(connection, sender, path, interface, method, parameters, invocation):
    unit = parameters.unpack()[0]
    if unit != "NetworkManager.service" or state == "not-found":
        invocation.return_dbus_error("org.freedesktop.DBus.Error.FileNotFound", "No such file or directory")
    else:
        invocation.return_value(GLib.Variant("(s)", (state,)))


connection = Gio.DBusConnection.new_for_address_sync(
    address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
info = Gio.DBusNodeInfo.new_for_xml(INTERFACE).interfaces[0]
connection.register_object("/org/freedesktop/systemd1", info, call, None, None)
reply = connection.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                             GLib.Variant("(su)", ("org.freedesktop.systemd1", 4)), GLib.VariantType("(u)"),
                             Gio.DBusCallFlags.NONE, -1, None)
if reply.unpack()[0] != 1:
    sys.exit("could not own org.freedesktop.systemd1")
print("ready", flush=True)
GLib.MainLoop().run()
