/* reachd's internet verdict, read from the properties of org.reachd.Reachability1, as the three answers
 * of a GNetworkMonitor; and CheckHost's refusal reasons as GLib's errors. */
#pragma once

#include <gio/gio.h>

typedef struct
{
  gboolean available;                /* Reachable */
  gboolean metered;                  /* Metered */
  GNetworkConnectivity connectivity; /* Connectivity, see reachd_connectivity () */
  gchar *interface;                  /* Interface: the link in use, "" when none */
} ReachdVerdict;

/* Reads the verdict from the proxy's cached properties; FALSE when they are missing (reachd is not on
 * the bus, or has not published a verdict). */
gboolean reachd_verdict_read (GDBusProxy *proxy, ReachdVerdict *verdict);

/* Whether the two give apps a different network (any answer, or the link in use, differs). */
gboolean reachd_verdict_differs (const ReachdVerdict *a, const ReachdVerdict *b);

void reachd_verdict_clear (ReachdVerdict *verdict);

/* GLib's connectivity for reachd's: LOCAL when unreachable; a reachable link without a connectivity
 * check ("unknown") counts as FULL, as GLib's own monitors count a default route. */
GNetworkConnectivity reachd_connectivity (gboolean reachable, const gchar *connectivity);

/* The GLib error for CheckHost's ReasonCode and Reason: "no-route" (no route, the kernel's ENETUNREACH)
 * is G_IO_ERROR_NETWORK_UNREACHABLE; any other code (an unreachable, prohibit or blackhole route, a link
 * that is down or has no address) is G_IO_ERROR_HOST_UNREACHABLE. The message carries the Reason. */
void reachd_set_unreachable_error (GError **error, const gchar *code, const gchar *reason);
