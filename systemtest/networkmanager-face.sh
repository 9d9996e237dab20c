# reachd's read-only NetworkManager face (docs/networkmanager-face.md) under real systemd, for systemtest/run
# (sourced). The installed unit passes --networkmanager-face auto, and the package enables it (multi-user.target):
# - face_at_boot: after a reboot of the bookworm tree without NetworkManager, the first thing asked is snapd's read
#   of Metered, and reachd answers it: it runs from boot (started before multi-user.target was reached), while
#   reachd-transfers still waits for a client.
# - face_without_networkmanager: in the bookworm tree without NetworkManager, reachd serves the face; snapd's
#   read (busctl, Metered as u) and a script's (dbus-send) get reachd's metered state, on eth0 and on wwan0.
# - face_with_networkmanager: boots a second tree with the real NetworkManager (Debian's network-manager,
#   enabled by its package): reachd installs beside it (dpkg refuses files another package owns), leaves the
#   face off while NetworkManager is enabled, also when both start at boot (after a reboot), serves it once NetworkManager is disabled, gives the name up when
#   NetworkManager starts (the hand-over time is printed) and takes it back when NetworkManager stops; neither
#   logs an error. With both packages' bus policies installed, user nobody's calls of the members NetworkManager
#   keeps for root are refused by the bus, and NetworkManager stays awake.

NM_NAME=org.freedesktop.NetworkManager NM_PATH=/org/freedesktop/NetworkManager

# nm_metered STATE: NetworkManager's metered value (NMMetered) for reachd's meteredState.
nm_metered() { case "$1" in unknown) echo 0 ;; yes) echo 1 ;; no) echo 2 ;; guess-yes) echo 3 ;; guess-no) echo 4 ;; *) echo "?$1" ;; esac; }
# name_owner_pid: the PID of the process that owns NetworkManager's name on the container's system bus.
name_owner_pid() { X busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus GetConnectionUnixProcessID s "$NM_NAME" | sed -n 's/^u //p'; }
owner_is() { [ "$(name_owner_pid)" = "$(prop "$1" MainPID)" ]; }
no_owner() { ! X busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus GetNameOwner s "$NM_NAME"; }
nm_version() { X busctl get-property "$NM_NAME" "$NM_PATH" "$NM_NAME" Version; }
face_metered() { X busctl get-property "$NM_NAME" "$NM_PATH" "$NM_NAME" Metered; }
# said TEXT: reachd's journal holds TEXT, within 10 s: journald reads what a service logs after the fact, so a
# line written just before what the test saw (the name taken) may not be in the journal yet.
said() { wait_until 10 "reachd's journal to say: $1" said_now "$1"; }
said_now() { X journalctl -b -u reachd.service -o cat --no-pager | grep -qF "$1"; }

# face_reads NM_VALUE: Metered as snapd reads it and as a script does, by user nobody, is NM_VALUE and what
# reachd's own meteredState maps to.
face_reads() {
    local state out
    state=$(X busctl get-property org.reachd.Reachability1 /org/reachd/Reachability1 org.reachd.Reachability1 MeteredState) || return 1
    state=${state#s \"} state=${state%\"}
    expect_eq "reachd's meteredState as NetworkManager's value" "$(nm_metered "$state")" "$1" || return 1
    out=$(X runuser -u nobody -- busctl get-property "$NM_NAME" "$NM_PATH" "$NM_NAME" Metered) || return 1
    note "busctl get-property $NM_NAME $NM_PATH $NM_NAME Metered: $out (reachd's meteredState: $state)"
    expect_eq "busctl get-property Metered" "$out" "u $1" || return 1
    out=$(X runuser -u nobody -- dbus-send --system --print-reply --dest="$NM_NAME" "$NM_PATH" \
          org.freedesktop.DBus.Properties.Get "string:$NM_NAME" string:Metered) || return 1
    out=$(printf '%s\n' "$out" | sed -n '2,$p' | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
    note "dbus-send --system --print-reply --dest=$NM_NAME $NM_PATH org.freedesktop.DBus.Properties.Get string:$NM_NAME string:Metered: $out"
    expect_eq "dbus-send Properties.Get Metered" "$out" "variant uint32 $1"
}

face_serves() {
    said "NetworkManager.service is not installed: the NetworkManager face is on (--networkmanager-face auto)" \
        || { echo "reachd did not say that it serves the face:"; X journalctl -b -u reachd.service -o cat --no-pager | grep -i face; return 1; }
    owner_is reachd.service || { echo "the name's owner is PID $(name_owner_pid), not reachd's"; return 1; }
    local version
    version=$(nm_version) || return 1
    note "Version: $version"
    case "$version" in 's "1.42.0-reachd-'*) ;; *) echo "Version $version does not say reachd"; return 1 ;; esac
    face_reads 4 || return 1
    ip -n "$NETNS" route replace default via 198.51.100.1 dev wwan0
    wait_until 10 "the face's Metered on wwan0" sh -c "[ \"\$(nsenter -t $C -a busctl get-property $NM_NAME $NM_PATH $NM_NAME Metered)\" = 'u 3' ]"
    face_reads 3; local read=$?
    ip -n "$NETNS" route replace default via 192.0.2.1 dev eth0
    [ "$read" = 0 ] && wait_until 10 "the face's Metered on eth0" sh -c "[ \"\$(nsenter -t $C -a busctl get-property $NM_NAME $NM_PATH $NM_NAME Metered)\" = 'u 4' ]"
}

# owns_its_name: the reachd that runs owns org.reachd.Reachability1 (asked with --auto-start=no: no activation
# can stand in for it). The package starts reachd during its installation, when the bus may not yet have read
# the policy that lets user reachd own the name.
own_status() { X busctl --auto-start=no --timeout=5 get-property org.reachd.Reachability1 /org/reachd/Reachability1 org.reachd.Reachability1 Status 2>&1; }
owns_its_name() {
    wait_until 20 "reachd on org.reachd.Reachability1" own_status \
        || { echo "reachd's own name: $(own_status)"; X journalctl -b -u reachd.service -o cat --no-pager | tail -n 5; return 1; }
}

# started_at_boot: reachd.service is enabled and became active before multi-user.target did (which waits for the
# units it wants): the boot started it, no client did.
started_at_boot() {
    local reachd target
    expect_eq "reachd.service enabled" "$(X systemctl is-enabled reachd.service)" enabled || return 1
    expect_eq "reachd.service after boot" "$(X systemctl is-active reachd.service)" active \
        || { X journalctl -b -u reachd.service -o cat --no-pager | tail -n 10; return 1; }
    reachd=$(prop reachd.service ActiveEnterTimestampMonotonic) target=$(prop multi-user.target ActiveEnterTimestampMonotonic)
    [ "$reachd" -gt 0 ] && [ "$reachd" -le "$target" ] \
        || { echo "reachd.service active at $reachd us, multi-user.target at $target us"; return 1; }
}

# booted_face_serves: the first command after the reboot is snapd's read, by user nobody (no activation file can
# start reachd for NetworkManager's name: only the boot can have).
booted_face_serves() {
    local out
    out=$(X runuser -u nobody -- busctl get-property "$NM_NAME" "$NM_PATH" "$NM_NAME" Metered) \
        || { echo "busctl get-property Metered failed: $out"; X systemctl status --no-pager reachd.service; return 1; }
    note "first command after the reboot: busctl get-property $NM_NAME $NM_PATH $NM_NAME Metered: $out"
    expect_eq "Metered at boot (eth0)" "$out" "u 4" || return 1
    started_at_boot || return 1
    owner_is reachd.service || { echo "the name's owner is PID $(name_owner_pid), not reachd's"; return 1; }
    said "NetworkManager.service is not installed: the NetworkManager face is on (--networkmanager-face auto)" \
        || { echo "reachd did not say that it serves the face"; return 1; }
    expect_eq "reachd-transfers.service before its first client" "$(X systemctl is-active reachd-transfers.service)" inactive || return 1
    out=$(X journalctl -q -b -p warning --no-pager -o short-monotonic -u reachd.service)
    [ -z "$out" ] || { echo "$out"; return 1; }
}

face_at_boot() {
    check "after a reboot without NetworkManager, snapd's busctl read of Metered (the first command) is answered: reachd runs from boot (before multi-user.target), reachd-transfers still waits" booted_face_serves
}

face_without_networkmanager() {
    check "without NetworkManager the installed reachd serves the NetworkManager face (auto): snapd's busctl read and dbus-send get reachd's Metered (eth0 4, wwan0 3), Version says reachd" face_serves
}

# --- With the real NetworkManager --------------------------------------------------------------------------------
nm_installed_beside() {
    wait_until 30 "NetworkManager on its name" owner_is NetworkManager.service || { X systemctl status --no-pager NetworkManager.service; return 1; }
    installed || return 1
    expect_eq "reachd.service started by the package" "$(X systemctl is-active reachd.service)" active || return 1
    owns_its_name || return 1
    local common
    common=$(X sh -c 'dpkg -L reachd | sort > /tmp/reachd.files; dpkg -L network-manager libnm0 | sort -u > /tmp/nm.files
                      comm -12 /tmp/reachd.files /tmp/nm.files | while read -r f; do [ -d "$f" ] || echo "$f"; done') || return 1
    [ -z "$common" ] || { echo "files of both packages: $common"; return 1; }
    X reachctl status >/dev/null || { X journalctl -b -u reachd.service -o cat --no-pager | tail -n 10; return 1; }
    said "NetworkManager.service is enabled: the NetworkManager face is off (--networkmanager-face auto)" \
        || { echo "reachd did not say that the face is off:"; X journalctl -b -u reachd.service -o cat --no-pager | grep -i face; return 1; }
    owner_is NetworkManager.service || { echo "the name's owner is PID $(name_owner_pid), not NetworkManager's"; return 1; }
    local version
    version=$(nm_version) || return 1
    note "NetworkManager's Version: $version"
    case "$version" in *reachd*) echo "Version $version is reachd's"; return 1 ;; esac
}

# root_only_refused: with the package's bus policy installed beside NetworkManager's (the bus reads the directory
# in its own order), user nobody's Sleep and SetLogging are refused by the bus itself, and NetworkManager stays
# awake (State 10 is asleep).
root_only_refused() {
    local call out
    for call in "Sleep boolean:true" "SetLogging string:trace string:ALL"; do
        # shellcheck disable=SC2086 # the call's arguments, split
        out=$(X runuser -u nobody -- dbus-send --system --print-reply --dest="$NM_NAME" "$NM_PATH" "$NM_NAME.${call%% *}" ${call#* } 2>&1) \
            && { echo "nobody's $call passed: $out"; return 1; }
        case "$out" in *org.freedesktop.DBus.Error.AccessDenied*) ;; *) echo "nobody's $call: $out"; return 1 ;; esac
    done
    out=$(X busctl get-property "$NM_NAME" "$NM_PATH" "$NM_NAME" State) || return 1
    note "NetworkManager's State after nobody's Sleep and SetLogging: $out"
    [ "$out" != "u 10" ] || { echo "NetworkManager is asleep"; return 1; }
}

# nm_at_boot: after a reboot with NetworkManager enabled, both started at boot: NetworkManager owns its name,
# reachd (auto) runs with the face off, and neither logs an error.
nm_at_boot() {
    wait_until 30 "NetworkManager on its name" owner_is NetworkManager.service || { X systemctl status --no-pager NetworkManager.service; return 1; }
    started_at_boot || return 1
    said "NetworkManager.service is enabled: the NetworkManager face is off (--networkmanager-face auto)" \
        || { echo "reachd did not say that the face is off:"; X journalctl -b -u reachd.service -o cat --no-pager | grep -i face; return 1; }
    case "$(nm_version)" in *reachd*|'') echo "Version $(nm_version) is not NetworkManager's"; return 1 ;; esac
    nm_quiet_journal
}

handover() {
    X systemctl disable --now NetworkManager.service 2>/dev/null || return 1
    wait_until 10 "NetworkManager's name free" no_owner || return 1
    X systemctl restart reachd.service || return 1
    wait_until 20 "reachd's face on the name" owner_is reachd.service || { X journalctl -b -u reachd.service -o cat --no-pager | tail -n 10; return 1; }
    said "NetworkManager.service is disabled: the NetworkManager face is on (--networkmanager-face auto)" || { echo "reachd did not say the face is on"; return 1; }
    case "$(nm_version)" in *-reachd-*) ;; *) echo "Version $(nm_version) is not reachd's"; return 1 ;; esac
    local reachd start owned back
    reachd=$(prop reachd.service MainPID)
    start=$(date +%s%N)
    X systemctl start NetworkManager.service || { X journalctl -b -u NetworkManager.service -o cat --no-pager | tail -n 10; return 1; }
    until owner_is NetworkManager.service; do
        [ $(( $(date +%s%N) - start )) -lt 20000000000 ] || { echo "NetworkManager does not own its name after 20 s"; return 1; }
        sleep 0.02
    done
    owned=$(date +%s%N)
    said "gave org.freedesktop.NetworkManager up for NetworkManager" || { echo "reachd did not say it stepped back"; return 1; }
    back=$(X journalctl -b -u reachd.service -o short-unix --no-pager | grep -F "gave org.freedesktop.NetworkManager up" | tail -n 1 | cut -d' ' -f1)
    note "hand-over: NetworkManager owned its name $(( (owned - start) / 1000000 )) ms after systemctl start NetworkManager," \
         "$(awk -v owned="$owned" -v back="$back" 'BEGIN { printf "%d", (owned / 1e9 - back) * 1000 }') ms after the face stepped back (its ExecStartPre=); polled every 20 ms"
    case "$(nm_version)" in *reachd*) echo "Version $(nm_version) is reachd's"; return 1 ;; esac
    expect_eq "reachd's PID" "$(prop reachd.service MainPID)" "$reachd" || return 1
    X systemctl stop NetworkManager.service || return 1
    wait_until 20 "the face back on the name" owner_is reachd.service || { echo "the name's owner: $(name_owner_pid)"; return 1; }
}

nm_quiet_journal() {
    local lines
    lines=$(X journalctl -q -b -p err --no-pager -o short-monotonic -u reachd.service -u NetworkManager.service)
    [ -z "$lines" ] || { echo "$lines"; return 1; }
    lines=$(X journalctl -q -b -p warning --no-pager -o short-monotonic -u reachd.service)
    [ -z "$lines" ] || { echo "$lines"; return 1; }
    note "NetworkManager's warnings in the container: $(X journalctl -q -b -p warning --no-pager -o cat -u NetworkManager.service | wc -l)"
}

face_with_networkmanager() {
    local nm_tree nm_root
    shutdown_container
    nm_tree=$(cached_tree bookworm "$TREE_PACKAGES,network-manager") || exit 2
    nm_root=$(writable_tree "${id}n" "$nm_tree") || die "cannot mount a writable overlay of $nm_tree"
    log "booting $(basename "$nm_tree") (network-manager installed and enabled) with systemd as PID 1"
    BOOT_VOLATILE=no boot "${id}n" "$nm_root" "$NETNS" "$WORK/pkg"
    check "with the real NetworkManager enabled and running, the package installs beside it (no file in common) and starts reachd, which owns its own name and (auto) leaves the face off" nm_installed_beside
    log "rebooting the container"
    reboot_container "${id}n" "$nm_root" "$NETNS" "$WORK/pkg"
    check "after a reboot with NetworkManager enabled: reachd runs from boot with the face off, NetworkManager owns its name, neither logs an error" nm_at_boot
    check "both packages' bus policies installed: nobody's Sleep and SetLogging are refused by the bus (AccessDenied), NetworkManager stays awake" root_only_refused
    check "NetworkManager disabled: reachd's face serves; NetworkManager started: it owns its name, the face is gone; stopped: the face is back" handover
    check "journalctl -p err -u reachd -u NetworkManager: no error from either (no warning from reachd)" nm_quiet_journal
}
