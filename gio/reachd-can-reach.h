/* GNetworkMonitor's can_reach through reachd's CheckHost: the kernel's own route decision (policy rules,
 * unreachable and prohibit routes included) for each address of the connectable, in the order GLib's
 * resolver (or proxy resolver) gives them; reachable as soon as one address is. */
#pragma once

#include <gio/gio.h>

gboolean reachd_can_reach (GDBusConnection *bus, GSocketConnectable *connectable, GCancellable *cancellable,
                           GError **error);

/* `source` becomes the task's source object (the monitor). */
void reachd_can_reach_async (GDBusConnection *bus, GSocketConnectable *connectable, gpointer source,
                             GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data);

gboolean reachd_can_reach_finish (GAsyncResult *result, GError **error);
