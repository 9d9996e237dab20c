#include "reachd-verdict.h"

/* GLib has one word for cost, network-metered: a roaming path, or one over its data budget, is metered there
 * too (CostFlags has roaming or overDataLimit; absent from a reachd older than these flags). */
static gboolean
costs_as_metered (GVariant *cost_flags)
{
  if (cost_flags == NULL || !g_variant_is_of_type (cost_flags, G_VARIANT_TYPE_STRING_ARRAY))
    return FALSE;
  g_autofree const gchar **flags = g_variant_get_strv (cost_flags, NULL);
  return g_strv_contains (flags, "roaming") || g_strv_contains (flags, "overDataLimit");
}

gboolean
reachd_verdict_read (GDBusProxy *proxy, ReachdVerdict *verdict)
{
  g_autoptr(GVariant) reachable = g_dbus_proxy_get_cached_property (proxy, "Reachable");
  g_autoptr(GVariant) metered = g_dbus_proxy_get_cached_property (proxy, "Metered");
  g_autoptr(GVariant) connectivity = g_dbus_proxy_get_cached_property (proxy, "Connectivity");
  g_autoptr(GVariant) interface = g_dbus_proxy_get_cached_property (proxy, "Interface");
  g_autoptr(GVariant) cost_flags = g_dbus_proxy_get_cached_property (proxy, "CostFlags");

  if (reachable == NULL || !g_variant_is_of_type (reachable, G_VARIANT_TYPE_BOOLEAN) ||
      metered == NULL || !g_variant_is_of_type (metered, G_VARIANT_TYPE_BOOLEAN) ||
      connectivity == NULL || !g_variant_is_of_type (connectivity, G_VARIANT_TYPE_STRING))
    return FALSE;

  verdict->available = g_variant_get_boolean (reachable);
  verdict->metered = g_variant_get_boolean (metered) || costs_as_metered (cost_flags);
  verdict->connectivity = reachd_connectivity (verdict->available, g_variant_get_string (connectivity, NULL));
  verdict->interface = g_strdup (interface != NULL && g_variant_is_of_type (interface, G_VARIANT_TYPE_STRING)
                                   ? g_variant_get_string (interface, NULL) : "");
  return TRUE;
}

gboolean
reachd_verdict_differs (const ReachdVerdict *a, const ReachdVerdict *b)
{
  return a->available != b->available || a->metered != b->metered || a->connectivity != b->connectivity ||
         g_strcmp0 (a->interface, b->interface) != 0;
}

void
reachd_verdict_clear (ReachdVerdict *verdict)
{
  g_clear_pointer (&verdict->interface, g_free);
}

GNetworkConnectivity
reachd_connectivity (gboolean reachable, const gchar *connectivity)
{
  if (!reachable || g_str_equal (connectivity, "none"))
    return G_NETWORK_CONNECTIVITY_LOCAL;
  if (g_str_equal (connectivity, "portal"))
    return G_NETWORK_CONNECTIVITY_PORTAL;
  if (g_str_equal (connectivity, "limited"))
    return G_NETWORK_CONNECTIVITY_LIMITED;
  return G_NETWORK_CONNECTIVITY_FULL;
}

void
reachd_set_unreachable_error (GError **error, const gchar *code, const gchar *reason)
{
  gboolean no_route = g_str_equal (code, "no-route");

  g_set_error (error, G_IO_ERROR, no_route ? G_IO_ERROR_NETWORK_UNREACHABLE : G_IO_ERROR_HOST_UNREACHABLE,
               "reachd: %s", *reason != '\0' ? reason : "unreachable");
}
