// The sd-bus object tables of reachd's read-only NetworkManager face (docs/networkmanager-face.md), in C
// because sd-bus builds vtables with macros that Swift cannot import. Every entry forwards to Swift.
#ifndef REACHD_NM_FACE_H
#define REACHD_NM_FACE_H

#include <systemd/sd-bus.h>

/// Callbacks into Swift. `context` is the value given to reachd_nm_face_add.
typedef struct {
    /// Appends property `name` of `interface` of the object at `path` to `reply`; returns >= 0 or a negative errno.
    int (*get_property)(void *context, const char *path, const char *interface, const char *name, sd_bus_message *reply);
    /// Handles a method call (reads the member): replies and returns 1, or returns a negative errno.
    int (*method)(void *context, sd_bus_message *call);
    /// 1 when an object at `path` (a device or the active connection) has `interface`, else 0.
    int (*exists)(void *context, const char *path, const char *interface);
    /// The object paths below the manager, as a NULL-terminated array from malloc (strings from strdup).
    char **(*nodes)(void *context);
} reachd_nm_face_callbacks;

/// What reachd_nm_face_add registers.
typedef enum {
    /// org.freedesktop.NetworkManager at /org/freedesktop/NetworkManager.
    REACHD_NM_FACE_MANAGER,
    /// org.freedesktop.NetworkManager.Device below /org/freedesktop/NetworkManager/Devices.
    REACHD_NM_FACE_DEVICES,
    /// org.freedesktop.NetworkManager.Connection.Active below /org/freedesktop/NetworkManager/ActiveConnection.
    REACHD_NM_FACE_ACTIVE,
    /// The enumerator of the objects below /org/freedesktop/NetworkManager (introspection, ObjectManager).
    REACHD_NM_FACE_NODES,
    /// org.freedesktop.DBus.ObjectManager at /org/freedesktop, as NetworkManager serves it.
    REACHD_NM_FACE_OBJECT_MANAGER,
    /// org.reachd.NetworkManagerFace1 (StepBack) at /org/reachd/NetworkManagerFace1.
    REACHD_NM_FACE_CONTROL,
    /// The type-specific device interfaces libnm builds its device objects from (Device.Wired, .Wireless,
    /// .Modem, .Bluetooth, .Generic), below /org/freedesktop/NetworkManager/Devices.
    REACHD_NM_FACE_WIRED,
    REACHD_NM_FACE_WIRELESS,
    REACHD_NM_FACE_MODEM,
    REACHD_NM_FACE_BLUETOOTH,
    REACHD_NM_FACE_GENERIC,
} reachd_nm_face_part;

/// Registers one part of the face; its slot (kept until the face stops) into `*slot`.
int reachd_nm_face_add(sd_bus *bus, reachd_nm_face_part part, const reachd_nm_face_callbacks *callbacks,
                       void *context, sd_bus_slot **slot);

/// Emits signal `member` of `interface` at `path` with one argument of type `type` ('u' or 'o').
int reachd_nm_face_emit(sd_bus *bus, const char *path, const char *interface, const char *member, char type,
                        uint32_t number, const char *object);

/// Replies to `call` with an empty method return.
int reachd_nm_face_reply_empty(sd_bus_message *call);

#endif
