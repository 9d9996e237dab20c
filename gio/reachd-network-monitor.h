/* ReachdNetworkMonitor: a GNetworkMonitor that answers from reachd's verdict on the system bus. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define REACHD_TYPE_NETWORK_MONITOR (reachd_network_monitor_get_type ())
G_DECLARE_FINAL_TYPE (ReachdNetworkMonitor, reachd_network_monitor, REACHD, NETWORK_MONITOR, GObject)

/* Registers the type in `module` and as the "reachd" implementation of gio-network-monitor. */
void reachd_network_monitor_register (GIOModule *module);

G_END_DECLS
