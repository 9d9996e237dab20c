#!/usr/bin/python3
"""A GLib app's view of the network, as JSON lines on stdout (the GIO module's tests and bench/gio).

Prints {"event": "ready", "type": ..., "init_ms": ...} with the default GNetworkMonitor's answers once it
has one, then {"event": "changed", ...} for every network-changed signal, with the monitor's answers at
that moment. Every line has "t": CLOCK_MONOTONIC seconds. Commands, one a line on stdin:
  can_reach HOST [PORT]   GNetworkMonitor.can_reach and can_reach_async: {"event": "can_reach", ...}
  sync                    answers {"event": "synced"} once a round trip to reachd on the same bus
                          connection is over: every signal reachd sent before has been handled by then
  status                  the answers, and the process's open file descriptors and threads
  init_async TYPE         a new monitor of TYPE (a GType name) through GAsyncInitable:
                          {"event": "initialised", ...} with its answers, or its "error"
End of input ends the program."""
import json
import os
import sys
import time

from gi.repository import Gio, GLib, GObject


def emit(event, **fields):
    print(json.dumps({"event": event, "t": time.monotonic(), **fields}), flush=True)


def answers(monitor):
    return {
        "available": monitor.get_network_available(),
        "metered": monitor.get_network_metered(),
        "connectivity": monitor.get_connectivity().value_nick,
    }


def outcome(error=None):
    if error is None:
        return {"reachable": True}
    code = Gio.IOErrorEnum(error.code).value_nick if error.domain == "g-io-error-quark" else error.code
    return {"reachable": False, "error": code, "domain": error.domain, "message": error.message}


def can_reach(monitor, host, port, done):
    target = Gio.NetworkAddress.new(host, port)
    try:
        monitor.can_reach(target, None)
        sync = outcome()
    except GLib.Error as error:
        sync = outcome(error)

    def finished(source, result):
        try:
            source.can_reach_finish(result)
            asynchronous = outcome()
        except GLib.Error as error:
            asynchronous = outcome(error)
        emit("can_reach", host=host, sync=sync, **{"async": asynchronous})
        done()

    monitor.can_reach_async(target, None, finished)


def init_async(type_name, done):
    def initialised(monitor, result):
        try:
            monitor.init_finish(result)
            emit("initialised", type=type_name, **answers(monitor))
        except GLib.Error as error:
            emit("initialised", type=type_name, error=error.message)
        done()

    GObject.new(GObject.type_from_name(type_name)).init_async(GLib.PRIORITY_DEFAULT, None, initialised)


def main():
    started = time.monotonic()
    monitor = Gio.NetworkMonitor.get_default()
    init_ms = (time.monotonic() - started) * 1000
    emit("ready", type=type(monitor).__gtype__.name, init_ms=init_ms, **answers(monitor))
    monitor.connect("network-changed", lambda m, available: emit("changed", signalled=available, **answers(m)))

    loop = GLib.MainLoop()
    buffered = b""
    # Asynchronous commands under way, and whether input has ended: the program ends when both are done.
    state = {"busy": 0, "closed": False}

    def started():
        state["busy"] += 1

    def done():
        state["busy"] -= 1
        if state["closed"] and state["busy"] == 0:
            loop.quit()

    def run(words):
        if words[0] == "can_reach":
            started()
            can_reach(monitor, words[1], int(words[2]) if len(words) > 2 else 80, done)
        elif words[0] == "sync":
            bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
            bus.call("org.reachd.Reachability1", "/org/reachd/Reachability1", "org.freedesktop.DBus.Peer", "Ping",
                     None, None, Gio.DBusCallFlags.NO_AUTO_START, -1, None, lambda *_: (emit("synced"), done()))
            started()
        elif words[0] == "status":
            emit("status", fds=len(os.listdir("/proc/self/fd")), threads=len(os.listdir("/proc/self/task")),
                 **answers(monitor))
        elif words[0] == "init_async":
            started()
            init_async(words[1], done)
        else:
            emit("error", message="unknown command " + words[0])

    def readable(fd, condition):
        nonlocal buffered
        chunk = os.read(fd, 4096)
        if not chunk:
            state["closed"] = True
            if state["busy"] == 0:
                loop.quit()
            return False
        buffered += chunk
        *lines, buffered = buffered.split(b"\n")
        for line in lines:
            if line.split():
                run(line.decode().split())
        return True

    GLib.io_add_watch(0, GLib.PRIORITY_DEFAULT, GLib.IO_IN | GLib.IO_HUP, readable)
    loop.run()


main()
