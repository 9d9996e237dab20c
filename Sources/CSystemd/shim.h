// Thin shim: the libsystemd headers reachd uses (sd_notify, sd_listen_fds, sd_watchdog_enabled, sd-bus).
#ifndef REACHD_CSYSTEMD_SHIM_H
#define REACHD_CSYSTEMD_SHIM_H

#include <systemd/sd-daemon.h>
#include <systemd/sd-bus.h>

#endif
