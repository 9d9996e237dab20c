// The sd-bus object table for org.reachd.Reachability1, in C because sd-bus builds vtables with macros
// that Swift cannot import. Every entry forwards to the Swift callbacks given at registration.
#ifndef REACHD_BUS_H
#define REACHD_BUS_H

#include <systemd/sd-bus.h>

/// Callbacks into Swift. `context` is the value given to reachd_bus_add_object.
typedef struct {
    /// Appends property `name`'s value to `reply`; returns >= 0 or a negative errno.
    int (*get_property)(void *context, const char *name, sd_bus_message *reply);
    /// Handles CheckHost(s): replies now or later (keeping a reference); returns 1 when handled.
    int (*check_host)(void *context, sd_bus_message *call);
} reachd_bus_callbacks;

/// Exports the object at `path` with the interface `interface`.
int reachd_bus_add_object(sd_bus *bus, const char *path, const char *interface,
                          const reachd_bus_callbacks *callbacks, void *context, sd_bus_slot **slot);

#endif

#ifndef REACHD_TRANSFERS_BUS_H
#define REACHD_TRANSFERS_BUS_H

/// Callback of org.reachd.Transfers1: every method (Add, List, Show, Pause, Resume, Cancel, Refresh, Limit) goes to
/// `method`, which reads the member name; it replies now or later (keeping a reference) and returns 1.
typedef struct {
    int (*method)(void *context, sd_bus_message *call);
} reachd_transfers_bus_callbacks;

/// Exports org.reachd.Transfers1 (methods and the JobChanged signal) at `path`.
int reachd_transfers_bus_add_object(sd_bus *bus, const char *path, const char *interface,
                                    const reachd_transfers_bus_callbacks *callbacks, void *context, sd_bus_slot **slot);

/// The supplementary groups the bus daemon recorded for the sender of `call` when it connected
/// (org.freedesktop.DBus.GetConnectionCredentials, "UnixGroupIDs"; dbus-daemon takes them from SO_PEERGROUPS):
/// at most `max` into `groups`, their number into `*count`. 0, or a negative errno (-ENODATA: the bus
/// recorded none; -E2BIG: more than `max`, none given).
int reachd_bus_sender_groups(sd_bus_message *call, gid_t *groups, size_t max, size_t *count);

#endif
