#include "reachd_bus.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct reachd_bus_object {
    reachd_bus_callbacks callbacks;
    void *context;
};

static int get_property(sd_bus *bus, const char *path, const char *interface, const char *property,
                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
    struct reachd_bus_object *object = userdata;
    return object->callbacks.get_property(object->context, property, reply);
}

static int check_host(sd_bus_message *call, void *userdata, sd_bus_error *error) {
    struct reachd_bus_object *object = userdata;
    return object->callbacks.check_host(object->context, call);
}

static const sd_bus_vtable reachd_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Reachable", "b", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Status", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Metered", "b", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("MeteredReason", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("MeteredState", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("MeteredSource", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Interface", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Flags", "as", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Connectivity", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("CaptivePortalAPI", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("CaptivePortalURL", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("CaptivePortalSecondsRemaining", "x", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("CaptivePortalBytesRemaining", "x", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("BudgetState", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("BudgetUsedBytes", "x", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("BudgetLimitBytes", "x", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("BudgetPeriod", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Roaming", "b", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("RoamingSource", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Cost", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("CostFlags", "as", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("WifiNetwork", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("WifiBSSID", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_METHOD_WITH_NAMES("CheckHost", "s", SD_BUS_PARAM(name), "a{sv}", SD_BUS_PARAM(verdict),
                             check_host, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_VTABLE_END
};

static void free_object(void *userdata) {
    free(userdata);
}

int reachd_bus_add_object(sd_bus *bus, const char *path, const char *interface,
                          const reachd_bus_callbacks *callbacks, void *context, sd_bus_slot **slot) {
    struct reachd_bus_object *object = malloc(sizeof(*object));
    if (!object)
        return -ENOMEM;
    object->callbacks = *callbacks;
    object->context = context;
    int r = sd_bus_add_object_vtable(bus, slot, path, interface, reachd_vtable, object);
    if (r < 0) {
        free(object);
        return r;
    }
    sd_bus_slot_set_destroy_callback(*slot, free_object);
    return r;
}

struct reachd_transfers_object {
    reachd_transfers_bus_callbacks callbacks;
    void *context;
};

static int transfers_method(sd_bus_message *call, void *userdata, sd_bus_error *error) {
    struct reachd_transfers_object *object = userdata;
    return object->callbacks.method(object->context, call);
}

static const sd_bus_vtable transfers_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD_WITH_NAMES("Add", "ssa{sv}", SD_BUS_PARAM(url) SD_BUS_PARAM(output) SD_BUS_PARAM(options),
                             "a{sv}", SD_BUS_PARAM(job), transfers_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("List", "", , "aa{sv}", SD_BUS_PARAM(jobs), transfers_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("Show", "s", SD_BUS_PARAM(id), "a{sv}", SD_BUS_PARAM(job), transfers_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("Pause", "s", SD_BUS_PARAM(id), "a{sv}", SD_BUS_PARAM(job), transfers_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("Resume", "s", SD_BUS_PARAM(id), "a{sv}", SD_BUS_PARAM(job), transfers_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("Cancel", "s", SD_BUS_PARAM(id), "a{sv}", SD_BUS_PARAM(job), transfers_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("Refresh", "s", SD_BUS_PARAM(id), "a{sv}", SD_BUS_PARAM(job), transfers_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("Limit", "ss", SD_BUS_PARAM(id) SD_BUS_PARAM(rate), "a{sv}", SD_BUS_PARAM(job), transfers_method,
                             SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_SIGNAL_WITH_NAMES("JobChanged", "sustx", SD_BUS_PARAM(id) SD_BUS_PARAM(uid) SD_BUS_PARAM(state)
                             SD_BUS_PARAM(bytes_received) SD_BUS_PARAM(bytes_total), 0),
    SD_BUS_VTABLE_END
};

int reachd_transfers_bus_add_object(sd_bus *bus, const char *path, const char *interface,
                                    const reachd_transfers_bus_callbacks *callbacks, void *context, sd_bus_slot **slot) {
    struct reachd_transfers_object *object = malloc(sizeof(*object));
    if (!object)
        return -ENOMEM;
    object->callbacks = *callbacks;
    object->context = context;
    int r = sd_bus_add_object_vtable(bus, slot, path, interface, transfers_vtable, object);
    if (r < 0) {
        free(object);
        return r;
    }
    sd_bus_slot_set_destroy_callback(*slot, free_object);
    return r;
}

int reachd_bus_sender_groups(sd_bus_message *call, gid_t *groups, size_t max, size_t *count) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    const char *sender = sd_bus_message_get_sender(call);
    *count = 0;
    if (!sender) return -ENODATA;
    int r = sd_bus_call_method(sd_bus_message_get_bus(call), "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus", "GetConnectionCredentials", &error, &reply, "s", sender);
    sd_bus_error_free(&error);
    if (r < 0) return r;
    int found = 0;
    r = sd_bus_message_enter_container(reply, 'a', "{sv}");
    while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
        const char *key = NULL;
        if ((r = sd_bus_message_read_basic(reply, 's', &key)) < 0) break;
        if (strcmp(key, "UnixGroupIDs") == 0) {
            if ((r = sd_bus_message_enter_container(reply, 'v', "au")) < 0) break;
            if ((r = sd_bus_message_enter_container(reply, 'a', "u")) < 0) break;
            uint32_t gid;
            while ((r = sd_bus_message_read_basic(reply, 'u', &gid)) > 0) {
                if (*count < max) groups[(*count)++] = gid; else { r = -E2BIG; break; }
            }
            if (r < 0) break;
            if ((r = sd_bus_message_exit_container(reply)) < 0 || (r = sd_bus_message_exit_container(reply)) < 0) break;
            found = 1;
        } else if ((r = sd_bus_message_skip(reply, "v")) < 0) {
            break;
        }
        if ((r = sd_bus_message_exit_container(reply)) < 0) break;
    }
    sd_bus_message_unref(reply);
    if (r < 0) { *count = 0; return r; }
    return found ? 0 : -ENODATA;
}
