# What one local user can make the installed daemons hold (docs/limits.md), for systemtest/run (sourced in the booted
# container, after the metrics checks): the units' memory and tasks limits, then a hostile local load.

# The last line under docs/limits.md's bounds: each running service has its memory and tasks limits.
memory_and_tasks_limited() {
    expect_eq "reachd.service MemoryMax" "$(prop reachd.service MemoryMax)" $((768 << 20)) || return 1
    expect_eq "reachd.service TasksMax" "$(prop reachd.service TasksMax)" 512 || return 1
    expect_eq "reachd-transfers.service MemoryMax" "$(prop reachd-transfers.service MemoryMax)" $((1 << 30)) || return 1
    expect_eq "reachd-transfers.service TasksMax" "$(prop reachd-transfers.service TasksMax)" 1024 || return 1
    note "reachd's tasks: $(prop reachd.service TasksCurrent), memory: $(prop reachd.service MemoryCurrent) bytes"
}
check "the units set MemoryMax= and TasksMax= (reachd 768M and 512, reachd-transfers 1G and 1024)" memory_and_tasks_limited

# --- Hostile local load (docs/limits.md) ------------------------------------------------------------------------
# User nobody holds idle connections, each with half a request line, to every socket we listen on: reachd's
# (1,500), the system transfer instance's (3,000; nobody is outside its group) and both metrics endpoints (200
# each). Meanwhile root is answered within 1 s everywhere, the daemons stay idle (under 10% CPU over 3 s) and hold
# only the connections the limits allow; every descriptor comes back once nobody leaves.
cpu_ticks() { X awk '{ print $14 + $15 }' "/proc/$1/stat"; }
fd_count() { X sh -c "ls /proc/$1/fd | wc -l"; }
answered_within_a_second() {
    local start ms
    start=$(date +%s%N)
    "$@" >/dev/null || { echo "failed: $*"; return 1; }
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    note "answered in $ms ms under attack: $*"
    [ "$ms" -le 1000 ] || { echo "took $ms ms: $*"; return 1; }
}
attack_kept() { sed -n "s|^open: $1 kept \([0-9]*\) of.*|\1|p" "$WORK/attack.log"; }
under_attack() {
    local r0 t0 r1 t1 kept
    cp "$here/../Tests/Support/idle_attack.py" "$WORK/pkg/" && X rm -f /var/tmp/attack.ready || return 1
    X runuser -u nobody -- python3 /srv/pkg/idle_attack.py --ready /var/tmp/attack.ready unix:/run/reachd/reachd.sock:1500 \
        unix:/run/reachd/transfers.sock:3000 tcp:127.0.0.1:9464:200 tcp:127.0.0.1:9465:200 >"$WORK/attack.log" 2>&1 &
    wait_until 60 "the attacker's connections" X test -e /var/tmp/attack.ready || { cat "$WORK/attack.log"; return 1; }
    note "$(tr '\n' ';' < "$WORK/attack.log")"
    r0=$(cpu_ticks "$rpid") t0=$(cpu_ticks "$tpid")
    answered_within_a_second X reachctl status || return 1
    answered_within_a_second X reachctl download list --system || return 1
    answered_within_a_second scrape 9464 || return 1
    answered_within_a_second scrape 9465 || return 1
    sleep 3
    r1=$(cpu_ticks "$rpid") t1=$(cpu_ticks "$tpid")
    note "CPU over the attack's ~3 s: reachd $((r1 - r0)) ticks, reachd-transfers $((t1 - t0)) ticks (100 a second); fds $(fd_count "$rpid") (idle $rfd), $(fd_count "$tpid") (idle $tfd)"
    [ $((r1 - r0)) -le 30 ] || { echo "reachd used $((r1 - r0)) ticks of CPU in ~3 s"; return 1; }
    [ $((t1 - t0)) -le 30 ] || { echo "reachd-transfers used $((t1 - t0)) ticks of CPU in ~3 s"; return 1; }
    expect_eq "nobody's connections reachd kept" "$(attack_kept unix:/run/reachd/reachd.sock:1500)" 256 || return 1
    expect_eq "nobody's connections the system transfer instance kept" "$(attack_kept unix:/run/reachd/transfers.sock:3000)" 0 || return 1
    for endpoint in 9464 9465; do
        kept=$(attack_kept "tcp:127.0.0.1:$endpoint:200")
        [ -n "$kept" ] && [ "$kept" -le 64 ] || { echo "metrics $endpoint kept $kept idle connections"; return 1; }
    done
    [ "$(fd_count "$rpid")" -le $((rfd + 256 + 64 + 8)) ] || { echo "reachd holds $(fd_count "$rpid") fds"; return 1; }
    [ "$(fd_count "$tpid")" -le $((tfd + 64 + 8)) ] || { echo "reachd-transfers holds $(fd_count "$tpid") fds"; return 1; }
}
hostile_load() {
    local rpid tpid rfd tfd attacked
    rpid=$(prop reachd.service MainPID) tpid=$(prop reachd-transfers.service MainPID)
    X reachctl status >/dev/null && X reachctl download list --system >/dev/null || return 1
    rfd=$(fd_count "$rpid") tfd=$(fd_count "$tpid")
    under_attack; attacked=$?
    X pkill -u nobody -f idle_attack.py
    [ "$attacked" = 0 ] \
      && wait_until 20 "reachd's descriptors back" sh -c "[ \$(nsenter -t $C -a sh -c 'ls /proc/$rpid/fd | wc -l') -le $((rfd + 2)) ]" \
      && wait_until 20 "reachd-transfers' descriptors back" sh -c "[ \$(nsenter -t $C -a sh -c 'ls /proc/$tpid/fd | wc -l') -le $((tfd + 2)) ]" \
      && expect_eq "reachd.service PID after the attack" "$(prop reachd.service MainPID)" "$rpid"
    attacked=$?
    # Back to the package's own units for the checks that follow.
    X rm -rf /etc/reachd/reachd.toml /etc/systemd/system/reachd.service.d /etc/systemd/system/reachd-transfers.service.d || return 1
    X systemctl daemon-reload && X systemctl restart reachd.service reachd-transfers.service || return 1
    return "$attacked"
}
check "a local user's 1,500 + 3,000 + 2 x 200 idle connections: root is answered within 1 s, the daemons idle and bounded, every fd back after" hostile_load

