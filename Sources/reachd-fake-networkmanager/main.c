// A stand-in for NetworkManager on a test bus: the part of its D-Bus API reachd reads (GetDeviceByIpIface,
// Device.Metered with PropertiesChanged). Usage: reachd-fake-networkmanager IFACE=METERED ... (METERED is
// NMMetered: 0 unknown, 1 yes, 2 no, 3 guess-yes, 4 guess-no). Connects to $DBUS_SESSION_BUS_ADDRESS,
// prints "ready" once it owns org.freedesktop.NetworkManager, then reads "set IFACE METERED" lines on
// stdin (answering "ok") until stdin closes.
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#define MAX_DEVICES 16
#define DEVICE_INTERFACE "org.freedesktop.NetworkManager.Device"

struct device {
    char name[64];
    char path[96];
    uint32_t metered;
};

static struct device devices[MAX_DEVICES];
static int device_count;

static struct device *find(const char *name) {
    for (int i = 0; i < device_count; i++)
        if (strcmp(devices[i].name, name) == 0) return &devices[i];
    return NULL;
}

static int get_device_by_ip_iface(sd_bus_message *call, void *userdata, sd_bus_error *error) {
    const char *name;
    int r = sd_bus_message_read(call, "s", &name);
    if (r < 0) return r;
    struct device *device = find(name);
    if (!device)
        return sd_bus_error_setf(error, "org.freedesktop.NetworkManager.UnknownDevice", "No device found for the requested iface.");
    return sd_bus_reply_method_return(call, "o", device->path);
}

static int get_metered(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
    struct device *device = userdata;
    return sd_bus_message_append(reply, "u", device->metered);
}

static int get_interface(sd_bus *bus, const char *path, const char *interface, const char *property,
                         sd_bus_message *reply, void *userdata, sd_bus_error *error) {
    struct device *device = userdata;
    return sd_bus_message_append(reply, "s", device->name);
}

static const sd_bus_vtable manager_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("GetDeviceByIpIface", "s", "o", get_device_by_ip_iface, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_SIGNAL("DeviceAdded", "o", 0),
    SD_BUS_SIGNAL("DeviceRemoved", "o", 0),
    SD_BUS_VTABLE_END
};

static const sd_bus_vtable device_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Interface", "s", get_interface, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Metered", "u", get_metered, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_VTABLE_END
};

int main(int argc, char **argv) {
    sd_bus *bus = NULL;
    int r = sd_bus_open_user(&bus);
    if (r < 0) { fprintf(stderr, "sd_bus_open_user: %s\n", strerror(-r)); return 1; }
    r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/NetworkManager", "org.freedesktop.NetworkManager", manager_vtable, NULL);
    for (int i = 1; i < argc && device_count < MAX_DEVICES && r >= 0; i++) {
        struct device *device = &devices[device_count];
        char *equals = strchr(argv[i], '=');
        if (!equals || (size_t)(equals - argv[i]) >= sizeof(device->name)) { fprintf(stderr, "bad argument %s\n", argv[i]); return 2; }
        memcpy(device->name, argv[i], equals - argv[i]);
        device->metered = (uint32_t)atoi(equals + 1);
        snprintf(device->path, sizeof(device->path), "/org/freedesktop/NetworkManager/Devices/%d", device_count + 1);
        r = sd_bus_add_object_vtable(bus, NULL, device->path, DEVICE_INTERFACE, device_vtable, device);
        device_count++;
    }
    if (r >= 0) r = sd_bus_request_name(bus, "org.freedesktop.NetworkManager", 0);
    if (r < 0) { fprintf(stderr, "exporting: %s\n", strerror(-r)); return 1; }
    printf("ready\n");
    fflush(stdout);
    char line[256];
    size_t used = 0;
    for (;;) {
        while ((r = sd_bus_process(bus, NULL)) > 0) {}
        if (r < 0) return 1;
        sd_bus_flush(bus);
        struct pollfd fds[2] = {{sd_bus_get_fd(bus), (short)sd_bus_get_events(bus), 0}, {0, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR) return 1;
        if (!(fds[1].revents & (POLLIN | POLLHUP))) continue;
        ssize_t n = read(0, line + used, sizeof(line) - 1 - used);
        if (n <= 0) break;
        used += (size_t)n;
        line[used] = 0;
        char *newline;
        while ((newline = strchr(line, '\n'))) {
            *newline = 0;
            char name[64];
            unsigned value;
            struct device *device = NULL;
            if (sscanf(line, "set %63s %u", name, &value) == 2 && (device = find(name))) {
                device->metered = value;
                sd_bus_emit_properties_changed(bus, device->path, DEVICE_INTERFACE, "Metered", NULL);
                sd_bus_flush(bus);
                printf("ok\n");
            } else {
                printf("error: %s\n", line);
            }
            fflush(stdout);
            used -= (size_t)(newline + 1 - line);
            memmove(line, newline + 1, used + 1);
        }
    }
    sd_bus_flush_close_unref(bus);
    return 0;
}
