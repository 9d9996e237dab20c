/* The GIO module's entry points (the only symbols it exports): GIO loads it from its module directory
 * (or GIO_EXTRA_MODULES) and gio-querymodules caches which extension point it implements. */
#include <gio/gio.h>

#include "reachd-network-monitor.h"

G_MODULE_EXPORT void
g_io_module_load (GIOModule *module)
{
  reachd_network_monitor_register (module);
}

G_MODULE_EXPORT void
g_io_module_unload (GIOModule *module G_GNUC_UNUSED)
{
}

G_MODULE_EXPORT gchar **
g_io_module_query (void)
{
  gchar *extension_points[] = { G_NETWORK_MONITOR_EXTENSION_POINT_NAME, NULL };

  return g_strdupv (extension_points);
}
