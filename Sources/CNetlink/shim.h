// Thin shim: the libnl-3 / libnl-route-3 headers reachd uses, in one place,
// so that Swift sees exactly one C module for the kernel interface.
#ifndef REACHD_CNETLINK_SHIM_H
#define REACHD_CNETLINK_SHIM_H

#include <netlink/netlink.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/socket.h>
#include <netlink/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/addr.h>
#include <netlink/route/route.h>
#include <netlink/route/netconf.h>
#include <linux/if.h>
#include <linux/if_arp.h>
#include <linux/rtnetlink.h>
#include <linux/fib_rules.h>
#include <linux/netconf.h>
#include <linux/filter.h>

#endif
