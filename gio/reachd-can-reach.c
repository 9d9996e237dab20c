#include "reachd-can-reach.h"

#include "reachd-bus.h"
#include "reachd-verdict.h"

/* The address as CheckHost takes it, or NULL for an address that is not an internet one. */
static gchar *
address_text (GSocketAddress *address)
{
  if (!G_IS_INET_SOCKET_ADDRESS (address))
    return NULL;
  return g_inet_address_to_string (g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (address)));
}

/* TRUE when CheckHost's answer says reachable; otherwise keeps the first refusal in `refusal`. */
static gboolean
judge (GVariant *reply, GError **refusal)
{
  g_autoptr(GVariant) verdict = g_variant_get_child_value (reply, 0);
  gboolean reachable = FALSE;
  const gchar *reason = "";
  const gchar *code = "";

  g_variant_lookup (verdict, "Reachable", "b", &reachable);
  if (reachable)
    return TRUE;
  g_variant_lookup (verdict, "Reason", "&s", &reason);
  g_variant_lookup (verdict, "ReasonCode", "&s", &code);
  if (*refusal == NULL)
    reachd_set_unreachable_error (refusal, code, reason);
  return FALSE;
}

/* The error when no address was reachable: the first refusal, or (no address at all) host unreachable. */
static GError *
unreachable_error (GError **refusal)
{
  if (*refusal != NULL)
    return g_steal_pointer (refusal);
  return g_error_new_literal (G_IO_ERROR, G_IO_ERROR_HOST_UNREACHABLE, "reachd: no address to check");
}

static GVariant *
check_host_sync (GDBusConnection *bus, const gchar *address, GCancellable *cancellable, GError **error)
{
  return g_dbus_connection_call_sync (bus, REACHD_BUS_NAME, REACHD_BUS_PATH, REACHD_BUS_INTERFACE, "CheckHost",
                                      g_variant_new ("(s)", address), G_VARIANT_TYPE ("(a{sv})"),
                                      G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
}

gboolean
reachd_can_reach (GDBusConnection *bus, GSocketConnectable *connectable, GCancellable *cancellable, GError **error)
{
  g_autoptr(GSocketAddressEnumerator) addresses = g_socket_connectable_proxy_enumerate (connectable);
  g_autoptr(GError) refusal = NULL;
  GError *failure = NULL;
  GSocketAddress *address;

  while ((address = g_socket_address_enumerator_next (addresses, cancellable, &failure)) != NULL)
    {
      g_autofree gchar *text = address_text (address);
      g_autoptr(GVariant) reply = NULL;

      g_object_unref (address);
      if (text == NULL)
        continue;
      reply = check_host_sync (bus, text, cancellable, error);
      if (reply == NULL)
        return FALSE;
      if (judge (reply, &refusal))
        return TRUE;
    }
  g_propagate_error (error, failure != NULL ? failure : unreachable_error (&refusal));
  return FALSE;
}

/* One asynchronous can_reach: the addresses still to try and the first refusal. */
typedef struct
{
  GDBusConnection *bus;
  GSocketAddressEnumerator *addresses;
  GError *refusal;
} CanReach;

static void
can_reach_free (gpointer data)
{
  CanReach *state = data;

  g_object_unref (state->bus);
  g_object_unref (state->addresses);
  g_clear_error (&state->refusal);
  g_free (state);
}

static void next_address (GTask *task);

static void
checked (GObject *bus, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GTask) task = user_data;
  CanReach *state = g_task_get_task_data (task);
  GError *error = NULL;
  g_autoptr(GVariant) reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (bus), result, &error);

  if (reply == NULL)
    g_task_return_error (task, error);
  else if (judge (reply, &state->refusal))
    g_task_return_boolean (task, TRUE);
  else
    next_address (g_steal_pointer (&task));
}

static void
address_ready (GObject *enumerator, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GTask) task = user_data;
  CanReach *state = g_task_get_task_data (task);
  GCancellable *cancellable = g_task_get_cancellable (task);
  GError *error = NULL;
  g_autoptr(GSocketAddress) address =
    g_socket_address_enumerator_next_finish (G_SOCKET_ADDRESS_ENUMERATOR (enumerator), result, &error);
  g_autofree gchar *text = NULL;

  if (address == NULL)
    {
      g_task_return_error (task, error != NULL ? error : unreachable_error (&state->refusal));
      return;
    }
  text = address_text (address);
  if (text == NULL)
    {
      next_address (g_steal_pointer (&task));
      return;
    }
  g_dbus_connection_call (state->bus, REACHD_BUS_NAME, REACHD_BUS_PATH, REACHD_BUS_INTERFACE, "CheckHost",
                          g_variant_new ("(s)", text), G_VARIANT_TYPE ("(a{sv})"), G_DBUS_CALL_FLAGS_NONE, -1,
                          cancellable, checked, g_steal_pointer (&task));
}

/* Takes over the caller's reference to `task`. */
static void
next_address (GTask *task)
{
  CanReach *state = g_task_get_task_data (task);

  g_socket_address_enumerator_next_async (state->addresses, g_task_get_cancellable (task), address_ready, task);
}

void
reachd_can_reach_async (GDBusConnection *bus, GSocketConnectable *connectable, gpointer source,
                        GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
  GTask *task = g_task_new (source, cancellable, callback, user_data);
  CanReach *state = g_new0 (CanReach, 1);

  g_task_set_source_tag (task, reachd_can_reach_async);
  state->bus = g_object_ref (bus);
  state->addresses = g_socket_connectable_proxy_enumerate (connectable);
  g_task_set_task_data (task, state, can_reach_free);
  next_address (task);
}

gboolean
reachd_can_reach_finish (GAsyncResult *result, GError **error)
{
  return g_task_propagate_boolean (G_TASK (result), error);
}
