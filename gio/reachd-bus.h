/* Where reachd answers on the system bus (dbus/org.reachd.Reachability1.xml). */
#pragma once

#define REACHD_BUS_NAME "org.reachd.Reachability1"
#define REACHD_BUS_PATH "/org/reachd/Reachability1"
#define REACHD_BUS_INTERFACE "org.reachd.Reachability1"
