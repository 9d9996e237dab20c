# Helpers for systemtest/run and systemtest/networkd: a cached Debian tree, a container booted from it with systemd as PID 1 in a
# network namespace of ours, commands inside it, and checks that print TAP lines. Sourced, not run.

# The tree: debootstrap --variant=minbase of bookworm with what the package and the checks need, cached
# under /var/tmp and rebuilt when this list changes (cached_tree SUITE PACKAGES makes others beside it).
# libglib2.0-0 for the GIO module (a dependency of the package), python3-gi for the GLib program that checks it.
TREE_PACKAGES=systemd,systemd-sysv,dbus,libpam-systemd,dbus-user-session,libnl-route-3-200,libsystemd0,libsqlite3-0,iproute2,socat,procps,python3,libglib2.0-0,python3-gi
CACHE_DIR=${SYSTEMTEST_CACHE:-/var/tmp/reachd-systemtest}

log() { printf '# %s\n' "$*"; }
# note TEXT: a comment line in the output, also from inside a check (whose own output shows only on failure).
note() { printf '# %s\n' "$*" >&3; }
die() { printf 'systemtest: %s\n' "$*" >&2; exit 2; }

# The first deb line of the host's apt sources: the tree comes from the same mirror.
debian_mirror() {
    local uri
    uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n1)
    [ -n "$uri" ] || uri=$(awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
    echo "${uri:-http://deb.debian.org/debian}"
}

# cached_tree [SUITE [PACKAGES]]: prints the path of the cached tree of SUITE (bookworm) with PACKAGES
# (TREE_PACKAGES), building it first if needed (about 90 s, 260 MB).
cached_tree() {
    local suite=${1:-bookworm} packages=${2:-$TREE_PACKAGES} key tree scratch
    key=$(echo "$suite $packages" | sha256sum | cut -c1-12)
    tree=$CACHE_DIR/$suite-$key
    if [ ! -e "$tree/.complete" ]; then
        mkdir -p "$CACHE_DIR"
        scratch=$(mktemp -d "$CACHE_DIR/building.XXXXXX")
        log "debootstrap $suite into $tree (cached for later runs)" >&2
        debootstrap --variant=minbase --include="$packages" "$suite" "$scratch" "$(debian_mirror)" >"$scratch.log" 2>&1 \
            || { tail -n 20 "$scratch.log" >&2; rm -rf "$scratch" "$scratch.log"; die "debootstrap $suite failed"; }
        rm -f "$scratch.log"
        touch "$scratch/.complete"
        rm -rf "$tree"
        mv "$scratch" "$tree"
    fi
    echo "$tree"
}

# writable_tree NAME TREE: mounts a writable overlay of TREE (which stays clean) at $WORK/NAME.root, its changes
# in $WORK/NAME.upper, and prints its path: booted with BOOT_VOLATILE=no, what the container writes survives a
# reboot (shutdown_container, then boot again). The run's cleanup unmounts it.
writable_tree() {
    local root=$WORK/$1.root
    mkdir -p "$root" "$WORK/$1.upper" "$WORK/$1.work" || return 1
    mount -t overlay overlay -o "lowerdir=$2,upperdir=$WORK/$1.upper,workdir=$WORK/$1.work" "$root" || return 1
    echo "$root"
}
unmount_trees() { local root; for root in "$WORK"/*.root; do mountpoint -q "$root" && umount "$root"; done; return 0; }

# boot NAME TREE NETNS BIND [OPTION...]: boots TREE read-only under an overlay (nothing it writes survives;
# BOOT_VOLATILE=no boots it as it is, for a tree of writable_tree), with its own cgroup so that several can
# run, in network namespace NETNS, with BIND (a host directory) at /srv/pkg, and systemd-nspawn's OPTIONs
# (e.g. --capability=CAP_NET_ADMIN). Sets NSPAWN_PID and C (the container's PID 1) and waits for the system
# to be running.
boot() {
    local name=$1 tree=$2 netns=$3 bind=$4 state= options= volatile=${BOOT_VOLATILE:-overlay}
    shift 4
    [ $# = 0 ] || options=$(printf " '%s'" "$@")
    for h in systemd unified; do mkdir -p "/sys/fs/cgroup/$h/nspawn-$name"; done
    BOOT_LOG=$WORK/nspawn-$name.log
    setsid sh -c "echo \$\$ > /sys/fs/cgroup/systemd/nspawn-$name/cgroup.procs
                  echo \$\$ > /sys/fs/cgroup/unified/nspawn-$name/cgroup.procs
                  exec systemd-nspawn -D '$tree' -M '$name' --volatile=$volatile -b --register=no --keep-unit \
                       --console=read-only --network-namespace-path=/run/netns/$netns --bind-ro='$bind':/srv/pkg$options" \
        >"$BOOT_LOG" 2>&1 &
    NSPAWN_PID=$!
    CONTAINER=$name
    for _ in $(seq 600); do
        C=$(pgrep -P "$NSPAWN_PID" -x systemd) && state=$(nsenter -t "$C" -a systemctl is-system-running 2>/dev/null)
        case "$state" in running|degraded) return 0 ;; esac
        kill -0 "$NSPAWN_PID" 2>/dev/null || break
        sleep 0.1
    done
    tail -n 30 "$BOOT_LOG" >&2
    die "the container did not boot (state: ${state:-none})"
}

# reboot_container NAME TREE NETNS BIND: shuts the container down and boots TREE (a writable_tree) again.
reboot_container() { shutdown_container; BOOT_VOLATILE=no boot "$@"; }

shutdown_container() {
    [ -n "${NSPAWN_PID:-}" ] || return 0
    kill -TERM "$NSPAWN_PID" 2>/dev/null
    for _ in $(seq 120); do kill -0 "$NSPAWN_PID" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$NSPAWN_PID" 2>/dev/null && { log "nspawn did not exit, SIGKILL"; kill -KILL "$NSPAWN_PID"; }
    wait "$NSPAWN_PID" 2>/dev/null
    for h in systemd unified; do
        [ -d "/sys/fs/cgroup/$h/nspawn-$CONTAINER" ] && find "/sys/fs/cgroup/$h/nspawn-$CONTAINER" -depth -type d -exec rmdir {} \; 2>/dev/null
    done
    NSPAWN_PID=
}

# X CMD...: runs CMD inside the container as root, with a clean environment.
X() { nsenter -t "$C" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

# as USER CMD...: runs CMD inside the container as USER, as a login would leave it: HOME, and XDG_RUNTIME_DIR
# as pam_systemd sets it (/run/user/UID, which exists while the user has a user manager, e.g. with lingering).
as() {
    local user=$1 uid; shift
    uid=$(X id -u "$user") || return 1
    X runuser -u "$user" -- env HOME="/home/$user" XDG_RUNTIME_DIR="/run/user/$uid" "$@"
}

# uctl USER ARGS...: systemctl for USER's user manager (systemd --user), from root inside the container.
uctl() { local user=$1; shift; X systemctl --user --machine="$user@" "$@"; }

# prop UNIT PROPERTY: one property of a unit inside the container.
prop() { X systemctl show -P "$2" "$1"; }

# wait_until SECONDS DESCRIPTION CMD...: retries CMD (in this shell) every 0.1 s until it succeeds.
wait_until() {
    local seconds=$1 what=$2; shift 2
    local deadline=$(( $(date +%s) + seconds ))
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] || { log "timed out after ${seconds}s waiting for: $what"; return 1; }
        sleep 0.1
    done
}

# check NAME CMD...: one TAP line; CMD's output is shown when it fails.
PASSED=0 FAILED=0 CHECK=0
check() {
    local name=$1 output; shift
    CHECK=$((CHECK + 1))
    if output=$("$@" 2>&1); then
        PASSED=$((PASSED + 1)); echo "ok $CHECK - $name"
    else
        FAILED=$((FAILED + 1)); echo "not ok $CHECK - $name"
        [ -z "$output" ] || printf '%s\n' "$output" | sed 's/^/#   /'
    fi
}

# expect_eq WHAT ACTUAL EXPECTED
expect_eq() {
    [ "$2" = "$3" ] || { echo "$1: expected '$3', got '$2'"; return 1; }
}
