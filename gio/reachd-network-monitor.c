#include "reachd-network-monitor.h"

#include "reachd-bus.h"
#include "reachd-can-reach.h"
#include "reachd-verdict.h"

/* GIO takes the initialisable implementation of highest priority. GLib's own (gio/gnetworkmonitor*.c):
 * portal 40 (only inside a Flatpak or Snap sandbox), networkmanager 30, netlink 20, base 0. Above
 * NetworkManager's, below the portal's: sandboxed apps keep asking the portal. */
#define REACHD_MONITOR_PRIORITY 35

/* How long initialisation waits for D-Bus to start reachd when it is not running (once per boot: the
 * package starts reachd on demand). Past that the app gets GLib's next monitor; reachd goes on starting
 * and serves the apps that start after it. */
#define REACHD_ACTIVATION_TIMEOUT_MS 500

#define PROXY_FLAGS G_DBUS_PROXY_FLAGS_DO_NOT_AUTO_START

enum
{
  PROP_0,
  PROP_NETWORK_AVAILABLE,
  PROP_NETWORK_METERED,
  PROP_CONNECTIVITY,
};

struct _ReachdNetworkMonitor
{
  GObject parent_instance;
  GDBusProxy *proxy;     /* org.reachd.Reachability1; it follows the name to each new reachd */
  ReachdVerdict verdict; /* the answers given; they stand while reachd is away */
};

static void network_monitor_iface_init (GNetworkMonitorInterface *iface);
static void initable_iface_init (GInitableIface *iface);
static void async_initable_iface_init (GAsyncInitableIface *iface);

G_DEFINE_DYNAMIC_TYPE_EXTENDED (ReachdNetworkMonitor, reachd_network_monitor, G_TYPE_OBJECT, G_TYPE_FLAG_FINAL,
                                G_IMPLEMENT_INTERFACE_DYNAMIC (G_TYPE_INITABLE, initable_iface_init)
                                /* After GInitable: GNetworkMonitor requires it. */
                                G_IMPLEMENT_INTERFACE_DYNAMIC (G_TYPE_NETWORK_MONITOR, network_monitor_iface_init)
                                G_IMPLEMENT_INTERFACE_DYNAMIC (G_TYPE_ASYNC_INITABLE, async_initable_iface_init))

void
reachd_network_monitor_register (GIOModule *module)
{
  reachd_network_monitor_register_type (G_TYPE_MODULE (module));
  g_io_extension_point_implement (G_NETWORK_MONITOR_EXTENSION_POINT_NAME, REACHD_TYPE_NETWORK_MONITOR, "reachd",
                                  REACHD_MONITOR_PRIORITY);
}

/* --- Following reachd ------------------------------------------------------------------------------- */

/* reachd's PropertiesChanged (or, after a restart, the new reachd's properties): every answer that
 * changed is notified, and network-changed emitted once; nothing for a verdict that gives the same. */
static void
properties_changed (GDBusProxy *proxy, GVariant *changed G_GNUC_UNUSED, GStrv invalidated G_GNUC_UNUSED,
                    gpointer user_data)
{
  ReachdNetworkMonitor *self = user_data;
  ReachdVerdict was = self->verdict;
  ReachdVerdict now = { 0 };

  /* Gone with reachd when it leaves the bus: the last answers stand until the next reachd's arrive. */
  if (!reachd_verdict_read (proxy, &now))
    return;
  if (!reachd_verdict_differs (&was, &now))
    {
      reachd_verdict_clear (&now);
      return;
    }
  self->verdict = now;
  g_object_freeze_notify (G_OBJECT (self));
  if (was.available != now.available)
    g_object_notify (G_OBJECT (self), "network-available");
  if (was.metered != now.metered)
    g_object_notify (G_OBJECT (self), "network-metered");
  if (was.connectivity != now.connectivity)
    g_object_notify (G_OBJECT (self), "connectivity");
  g_object_thaw_notify (G_OBJECT (self));
  reachd_verdict_clear (&was);
  g_signal_emit_by_name (self, "network-changed", self->verdict.available);
}

/* Takes `proxy` when reachd owns the name and has a verdict. */
static gboolean
adopt (ReachdNetworkMonitor *self, GDBusProxy *proxy, GError **error)
{
  g_autofree gchar *owner = g_dbus_proxy_get_name_owner (proxy);

  if (owner == NULL)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_FAILED, "reachd is not on the system bus");
      return FALSE;
    }
  if (!reachd_verdict_read (proxy, &self->verdict))
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_FAILED, "reachd published no verdict on the system bus");
      return FALSE;
    }
  self->proxy = g_object_ref (proxy);
  g_signal_connect (proxy, "g-properties-changed", G_CALLBACK (properties_changed), self);
  return TRUE;
}

static gboolean
has_owner (GDBusProxy *proxy)
{
  g_autofree gchar *owner = g_dbus_proxy_get_name_owner (proxy);

  return owner != NULL;
}

static GVariant *
start_service_arguments (void)
{
  return g_variant_new ("(su)", REACHD_BUS_NAME, 0);
}

static void
prefix_start_error (GError **error)
{
  g_prefix_error (error, "reachd is not running and was not started: ");
}

/* --- GInitable ---------------------------------------------------------------------------------------- */

/* Fails at once when there is no system bus, or reachd is neither running nor activatable (D-Bus answers
 * StartServiceByName with ServiceUnknown); waits at most REACHD_ACTIVATION_TIMEOUT_MS for an activation. */
static gboolean
initable_init (GInitable *initable, GCancellable *cancellable, GError **error)
{
  ReachdNetworkMonitor *self = REACHD_NETWORK_MONITOR (initable);
  g_autoptr(GDBusProxy) proxy = g_dbus_proxy_new_for_bus_sync (G_BUS_TYPE_SYSTEM, PROXY_FLAGS, NULL, REACHD_BUS_NAME,
                                                               REACHD_BUS_PATH, REACHD_BUS_INTERFACE, cancellable, error);
  g_autoptr(GVariant) started = NULL;

  if (proxy == NULL)
    return FALSE;
  if (has_owner (proxy))
    return adopt (self, proxy, error);
  started = g_dbus_connection_call_sync (g_dbus_proxy_get_connection (proxy), "org.freedesktop.DBus",
                                         "/org/freedesktop/DBus", "org.freedesktop.DBus", "StartServiceByName",
                                         start_service_arguments (), G_VARIANT_TYPE ("(u)"), G_DBUS_CALL_FLAGS_NONE,
                                         REACHD_ACTIVATION_TIMEOUT_MS, cancellable, error);
  if (started == NULL)
    {
      prefix_start_error (error);
      return FALSE;
    }
  /* A new proxy loads the properties of the reachd that now owns the name. */
  g_clear_object (&proxy);
  proxy = g_dbus_proxy_new_for_bus_sync (G_BUS_TYPE_SYSTEM, PROXY_FLAGS, NULL, REACHD_BUS_NAME, REACHD_BUS_PATH,
                                         REACHD_BUS_INTERFACE, cancellable, error);
  return proxy != NULL && adopt (self, proxy, error);
}

static void
initable_iface_init (GInitableIface *iface)
{
  iface->init = initable_init;
}

/* --- GAsyncInitable: the same steps, none of them blocking ------------------------------------------- */

static void
new_proxy_async (GTask *task, GAsyncReadyCallback then)
{
  g_dbus_proxy_new_for_bus (G_BUS_TYPE_SYSTEM, PROXY_FLAGS, NULL, REACHD_BUS_NAME, REACHD_BUS_PATH,
                            REACHD_BUS_INTERFACE, g_task_get_cancellable (task), then, task);
}

static void
return_adopted (GTask *task, GDBusProxy *proxy)
{
  GError *error = NULL;

  if (adopt (g_task_get_source_object (task), proxy, &error))
    g_task_return_boolean (task, TRUE);
  else
    g_task_return_error (task, error);
}

static void
started_proxy_ready (GObject *source G_GNUC_UNUSED, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GTask) task = user_data;
  GError *error = NULL;
  g_autoptr(GDBusProxy) proxy = g_dbus_proxy_new_for_bus_finish (result, &error);

  if (proxy == NULL)
    g_task_return_error (task, error);
  else
    return_adopted (task, proxy);
}

static void
started (GObject *bus, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GTask) task = user_data;
  GError *error = NULL;
  g_autoptr(GVariant) reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (bus), result, &error);

  if (reply == NULL)
    {
      prefix_start_error (&error);
      g_task_return_error (task, error);
      return;
    }
  new_proxy_async (g_steal_pointer (&task), started_proxy_ready);
}

static void
proxy_ready (GObject *source G_GNUC_UNUSED, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GTask) task = user_data;
  GCancellable *cancellable = g_task_get_cancellable (task);
  GError *error = NULL;
  g_autoptr(GDBusProxy) proxy = g_dbus_proxy_new_for_bus_finish (result, &error);

  if (proxy == NULL)
    g_task_return_error (task, error);
  else if (has_owner (proxy))
    return_adopted (task, proxy);
  else
    g_dbus_connection_call (g_dbus_proxy_get_connection (proxy), "org.freedesktop.DBus", "/org/freedesktop/DBus",
                            "org.freedesktop.DBus", "StartServiceByName", start_service_arguments (),
                            G_VARIANT_TYPE ("(u)"), G_DBUS_CALL_FLAGS_NONE, REACHD_ACTIVATION_TIMEOUT_MS,
                            cancellable, started, g_steal_pointer (&task));
}

static void
init_async (GAsyncInitable *initable, int io_priority, GCancellable *cancellable, GAsyncReadyCallback callback,
            gpointer user_data)
{
  GTask *task = g_task_new (initable, cancellable, callback, user_data);

  g_task_set_source_tag (task, init_async);
  g_task_set_priority (task, io_priority);
  new_proxy_async (task, proxy_ready);
}

static gboolean
init_finish (GAsyncInitable *initable G_GNUC_UNUSED, GAsyncResult *result, GError **error)
{
  return g_task_propagate_boolean (G_TASK (result), error);
}

static void
async_initable_iface_init (GAsyncInitableIface *iface)
{
  iface->init_async = init_async;
  iface->init_finish = init_finish;
}

/* --- GNetworkMonitor ---------------------------------------------------------------------------------- */

static GDBusConnection *
bus_of (GNetworkMonitor *monitor)
{
  return g_dbus_proxy_get_connection (REACHD_NETWORK_MONITOR (monitor)->proxy);
}

static gboolean
can_reach (GNetworkMonitor *monitor, GSocketConnectable *connectable, GCancellable *cancellable, GError **error)
{
  return reachd_can_reach (bus_of (monitor), connectable, cancellable, error);
}

static void
can_reach_async (GNetworkMonitor *monitor, GSocketConnectable *connectable, GCancellable *cancellable,
                 GAsyncReadyCallback callback, gpointer user_data)
{
  reachd_can_reach_async (bus_of (monitor), connectable, monitor, cancellable, callback, user_data);
}

static gboolean
can_reach_finish (GNetworkMonitor *monitor G_GNUC_UNUSED, GAsyncResult *result, GError **error)
{
  return reachd_can_reach_finish (result, error);
}

static void
network_monitor_iface_init (GNetworkMonitorInterface *iface)
{
  iface->can_reach = can_reach;
  iface->can_reach_async = can_reach_async;
  iface->can_reach_finish = can_reach_finish;
}

/* --- GObject ------------------------------------------------------------------------------------------ */

static void
reachd_network_monitor_init (ReachdNetworkMonitor *self G_GNUC_UNUSED)
{
}

static void
get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  ReachdNetworkMonitor *self = REACHD_NETWORK_MONITOR (object);

  switch (prop_id)
    {
    case PROP_NETWORK_AVAILABLE:
      g_value_set_boolean (value, self->verdict.available);
      break;
    case PROP_NETWORK_METERED:
      g_value_set_boolean (value, self->verdict.metered);
      break;
    case PROP_CONNECTIVITY:
      g_value_set_enum (value, self->verdict.connectivity);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
    }
}

static void
finalize (GObject *object)
{
  ReachdNetworkMonitor *self = REACHD_NETWORK_MONITOR (object);

  if (self->proxy != NULL)
    g_signal_handlers_disconnect_by_data (self->proxy, self);
  g_clear_object (&self->proxy);
  reachd_verdict_clear (&self->verdict);
  G_OBJECT_CLASS (reachd_network_monitor_parent_class)->finalize (object);
}

static void
reachd_network_monitor_class_init (ReachdNetworkMonitorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = get_property;
  object_class->finalize = finalize;
  g_object_class_override_property (object_class, PROP_NETWORK_AVAILABLE, "network-available");
  g_object_class_override_property (object_class, PROP_NETWORK_METERED, "network-metered");
  g_object_class_override_property (object_class, PROP_CONNECTIVITY, "connectivity");
}

static void
reachd_network_monitor_class_finalize (ReachdNetworkMonitorClass *klass G_GNUC_UNUSED)
{
}
