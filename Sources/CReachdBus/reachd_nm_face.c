#include "reachd_nm_face.h"
#include <errno.h>
#include <stdlib.h>

struct face {
    reachd_nm_face_callbacks callbacks;
    void *context;
};

static int get_property(sd_bus *bus, const char *path, const char *interface, const char *property,
                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
    struct face *face = userdata;
    return face->callbacks.get_property(face->context, path, interface, property, reply);
}

static int method(sd_bus_message *call, void *userdata, sd_bus_error *error) {
    struct face *face = userdata;
    return face->callbacks.method(face->context, call);
}

static int find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found, sd_bus_error *error) {
    struct face *face = userdata;
    if (!face->callbacks.exists(face->context, path, interface))
        return 0;
    *found = userdata;
    return 1;
}

static int nodes(sd_bus *bus, const char *prefix, void *userdata, char ***result, sd_bus_error *error) {
    struct face *face = userdata;
    char **list = face->callbacks.nodes(face->context);
    if (!list)
        return -ENOMEM;
    *result = list;
    return 0;
}

#define P(name, type) SD_BUS_PROPERTY(name, type, get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE)
#define CONST(name, type) SD_BUS_PROPERTY(name, type, get_property, 0, SD_BUS_VTABLE_PROPERTY_CONST)
#define M(name, in, out) SD_BUS_METHOD(name, in, out, method, SD_BUS_VTABLE_UNPRIVILEGED)

static const sd_bus_vtable manager_vtable[] = {
    SD_BUS_VTABLE_START(0),
    M("Reload", "u", ""),
    M("GetDevices", "", "ao"),
    M("GetAllDevices", "", "ao"),
    M("GetDeviceByIpIface", "s", "o"),
    M("ActivateConnection", "ooo", "o"),
    M("AddAndActivateConnection", "a{sa{sv}}oo", "oo"),
    M("DeactivateConnection", "o", ""),
    M("Sleep", "b", ""),
    M("Enable", "b", ""),
    M("SetLogging", "ss", ""),
    M("CheckConnectivity", "", "u"),
    M("state", "", "u"),
    SD_BUS_SIGNAL("CheckPermissions", "", 0),
    SD_BUS_SIGNAL("StateChanged", "u", 0),
    SD_BUS_SIGNAL("DeviceAdded", "o", 0),
    SD_BUS_SIGNAL("DeviceRemoved", "o", 0),
    P("Devices", "ao"),
    P("AllDevices", "ao"),
    P("Checkpoints", "ao"),
    P("NetworkingEnabled", "b"),
    P("WirelessEnabled", "b"),
    P("WirelessHardwareEnabled", "b"),
    P("WwanEnabled", "b"),
    P("WwanHardwareEnabled", "b"),
    P("ActiveConnections", "ao"),
    P("PrimaryConnection", "o"),
    P("PrimaryConnectionType", "s"),
    P("Metered", "u"),
    P("ActivatingConnection", "o"),
    P("Startup", "b"),
    CONST("Version", "s"),
    P("State", "u"),
    P("Connectivity", "u"),
    P("ConnectivityCheckAvailable", "b"),
    P("ConnectivityCheckEnabled", "b"),
    P("ConnectivityCheckUri", "s"),
    SD_BUS_VTABLE_END
};

static const sd_bus_vtable device_vtable[] = {
    SD_BUS_VTABLE_START(0),
    M("Disconnect", "", ""),
    M("Delete", "", ""),
    SD_BUS_SIGNAL("StateChanged", "uuu", 0),
    CONST("Udi", "s"),
    CONST("Path", "s"),
    CONST("Interface", "s"),
    P("IpInterface", "s"),
    P("Driver", "s"),
    P("DeviceType", "u"),
    P("Metered", "u"),
    P("State", "u"),
    P("StateReason", "(uu)"),
    P("ActiveConnection", "o"),
    P("Ip4Connectivity", "u"),
    P("Ip6Connectivity", "u"),
    P("Managed", "b"),
    P("Autoconnect", "b"),
    P("Real", "b"),
    P("Ip4Config", "o"),
    P("Ip6Config", "o"),
    P("Dhcp4Config", "o"),
    P("Dhcp6Config", "o"),
    P("AvailableConnections", "ao"),
    SD_BUS_VTABLE_END
};

static const sd_bus_vtable active_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_SIGNAL("StateChanged", "uu", 0),
    P("Connection", "o"),
    P("SpecificObject", "o"),
    P("Id", "s"),
    P("Uuid", "s"),
    P("Type", "s"),
    P("Devices", "ao"),
    P("State", "u"),
    P("StateFlags", "u"),
    P("Default", "b"),
    P("Default6", "b"),
    P("Vpn", "b"),
    P("Ip4Config", "o"),
    P("Ip6Config", "o"),
    P("Dhcp4Config", "o"),
    P("Dhcp6Config", "o"),
    P("Master", "o"),
    SD_BUS_VTABLE_END
};

static const sd_bus_vtable control_vtable[] = {
    SD_BUS_VTABLE_START(0),
    M("StepBack", "", ""),
    SD_BUS_VTABLE_END
};

static const sd_bus_vtable wired_vtable[] = {
    SD_BUS_VTABLE_START(0),
    CONST("HwAddress", "s"),
    CONST("PermHwAddress", "s"),
    CONST("Speed", "u"),
    CONST("S390Subchannels", "as"),
    SD_BUS_VTABLE_END
};

static const sd_bus_vtable wireless_vtable[] = {
    SD_BUS_VTABLE_START(0),
    CONST("HwAddress", "s"),
    CONST("PermHwAddress", "s"),
    CONST("Mode", "u"),
    CONST("Bitrate", "u"),
    CONST("AccessPoints", "ao"),
    CONST("ActiveAccessPoint", "o"),
    CONST("WirelessCapabilities", "u"),
    CONST("LastScan", "x"),
    SD_BUS_VTABLE_END
};

static const sd_bus_vtable modem_vtable[] = {
    SD_BUS_VTABLE_START(0),
    CONST("ModemCapabilities", "u"),
    CONST("CurrentCapabilities", "u"),
    CONST("DeviceId", "s"),
    CONST("OperatorCode", "s"),
    CONST("Apn", "s"),
    SD_BUS_VTABLE_END
};

static const sd_bus_vtable bluetooth_vtable[] = {
    SD_BUS_VTABLE_START(0),
    CONST("HwAddress", "s"),
    CONST("Name", "s"),
    CONST("BtCapabilities", "u"),
    SD_BUS_VTABLE_END
};

static const sd_bus_vtable generic_vtable[] = {
    SD_BUS_VTABLE_START(0),
    CONST("HwAddress", "s"),
    CONST("TypeDescription", "s"),
    SD_BUS_VTABLE_END
};

static const struct {
    reachd_nm_face_part part;
    const char *interface;
    const sd_bus_vtable *vtable;
} typed_devices[] = {
    { REACHD_NM_FACE_WIRED, "org.freedesktop.NetworkManager.Device.Wired", wired_vtable },
    { REACHD_NM_FACE_WIRELESS, "org.freedesktop.NetworkManager.Device.Wireless", wireless_vtable },
    { REACHD_NM_FACE_MODEM, "org.freedesktop.NetworkManager.Device.Modem", modem_vtable },
    { REACHD_NM_FACE_BLUETOOTH, "org.freedesktop.NetworkManager.Device.Bluetooth", bluetooth_vtable },
    { REACHD_NM_FACE_GENERIC, "org.freedesktop.NetworkManager.Device.Generic", generic_vtable },
};

static void free_face(void *userdata) {
    free(userdata);
}

int reachd_nm_face_add(sd_bus *bus, reachd_nm_face_part part, const reachd_nm_face_callbacks *callbacks,
                       void *context, sd_bus_slot **slot) {
    if (part == REACHD_NM_FACE_OBJECT_MANAGER)
        return sd_bus_add_object_manager(bus, slot, "/org/freedesktop");
    struct face *face = malloc(sizeof(*face));
    if (!face)
        return -ENOMEM;
    face->callbacks = *callbacks;
    face->context = context;
    int r;
    switch (part) {
    case REACHD_NM_FACE_MANAGER:
        r = sd_bus_add_object_vtable(bus, slot, "/org/freedesktop/NetworkManager", "org.freedesktop.NetworkManager",
                                     manager_vtable, face);
        break;
    case REACHD_NM_FACE_DEVICES:
        r = sd_bus_add_fallback_vtable(bus, slot, "/org/freedesktop/NetworkManager/Devices",
                                       "org.freedesktop.NetworkManager.Device", device_vtable, find, face);
        break;
    case REACHD_NM_FACE_ACTIVE:
        r = sd_bus_add_fallback_vtable(bus, slot, "/org/freedesktop/NetworkManager/ActiveConnection",
                                       "org.freedesktop.NetworkManager.Connection.Active", active_vtable, find, face);
        break;
    case REACHD_NM_FACE_CONTROL:
        r = sd_bus_add_object_vtable(bus, slot, "/org/reachd/NetworkManagerFace1", "org.reachd.NetworkManagerFace1",
                                     control_vtable, face);
        break;
    case REACHD_NM_FACE_NODES:
        r = sd_bus_add_node_enumerator(bus, slot, "/org/freedesktop/NetworkManager", nodes, face);
        break;
    default:
        r = -EINVAL;
        for (size_t i = 0; i < sizeof(typed_devices) / sizeof(typed_devices[0]); i++)
            if (typed_devices[i].part == part)
                r = sd_bus_add_fallback_vtable(bus, slot, "/org/freedesktop/NetworkManager/Devices", typed_devices[i].interface,
                                               typed_devices[i].vtable, find, face);
        break;
    }
    if (r < 0) {
        free(face);
        return r;
    }
    sd_bus_slot_set_destroy_callback(*slot, free_face);
    return r;
}

int reachd_nm_face_emit(sd_bus *bus, const char *path, const char *interface, const char *member, char type,
                        uint32_t number, const char *object) {
    if (type == 'o')
        return sd_bus_emit_signal(bus, path, interface, member, "o", object);
    return sd_bus_emit_signal(bus, path, interface, member, "u", number);
}

int reachd_nm_face_reply_empty(sd_bus_message *call) {
    return sd_bus_reply_method_return(call, NULL);
}
