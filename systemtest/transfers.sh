# Transfers as shipped, for systemtest/run (sourced after reachd's checks, in the booted container): each
# user's own instance (lingering users alice and bob; carol has none) and the system instance (a mirror
# directory refused, then granted; uploads; group members served, others refused). Sets alice_uid and
# alice_job, and transfers_from / transfers_pid for the watchdog check that follows.

# --- Transfers as shipped: each user's own instance ----------------------------------------------------------
# alice and bob linger (loginctl enable-linger), so their user managers run without a login, as a user's
# does while logged in; carol has none and uses only the system instance.
for user in alice bob carol; do X useradd --create-home --shell /bin/sh "$user"; done
alice_uid=$(X id -u alice)

# owner_mode PATH: "user:group mode" of a path inside the container.
owner_mode() { X stat -c '%U:%G %a' "$1"; }
# user_of PID: the user a process inside the container runs as (full name: ps cuts names longer than 8).
user_of() { X ps -o user:32= -p "$1" | tr -d ' '; }

user_managers() {
    local user uid
    for user in alice bob; do
        uid=$(X id -u "$user")
        X loginctl enable-linger "$user" || return 1
        wait_until 30 "user@$uid.service" sh -c "[ \"\$(nsenter -t $C -a systemctl is-active user@$uid.service)\" = active ]" \
            || { X systemctl status --no-pager "user@$uid.service"; return 1; }
        wait_until 10 "$user's reachd-transfers.socket" sh -c "[ \"\$(nsenter -t $C -a systemctl --user --machine=$user@ is-active reachd-transfers.socket)\" = active ]" \
            || { uctl "$user" status --no-pager reachd-transfers.socket; return 1; }
        expect_eq "$user's reachd-transfers.service started before its first client" "$(uctl "$user" is-active reachd-transfers.service)" inactive || return 1
        expect_eq "$user's socket" "$(owner_mode "/run/user/$uid/reachd-transfers.sock")" "$user:$user 600" || return 1
    done
    expect_eq "user unit enabled for every user" "$(X systemctl --global is-enabled reachd-transfers.socket)" enabled
}
check "a lingering user's manager listens on their own reachd-transfers.socket (0600), enabled for every user" user_managers

user_download() {
    local job pid
    job=$(as alice reachctl download add http://192.0.2.1:8080/file.bin --output /home/alice/file.bin) || { echo "add: $job"; return 1; }
    as alice reachctl download wait "$job" --timeout 60 >/dev/null || { as alice reachctl download show "$job"; return 1; }
    expect_eq "alice's reachd-transfers.service" "$(uctl alice is-active reachd-transfers.service)" active || return 1
    pid=$(uctl alice show -P MainPID reachd-transfers.service)
    expect_eq "the user the daemon runs as" "$(user_of "$pid")" alice || return 1
    expect_eq "sha256" "$(X sha256sum /home/alice/file.bin | cut -d' ' -f1)" "$file_sha" || return 1
    expect_eq "owner and mode" "$(owner_mode /home/alice/file.bin)" "alice:alice 644" || return 1
    expect_eq "job table" "$(owner_mode /home/alice/.local/state/reachd/jobs.sqlite | cut -d' ' -f1)" "alice:alice" || return 1
    expect_eq "the system instance's list" "$(X reachctl download list --json | grep -c "\"$job\"")" 0
}
check "a user's download socket-activates their own instance, which runs as them: the file is theirs (0644), checksum matches, jobs in ~/.local/state/reachd" user_download

# job_ids USER [--system]: the ids of the jobs USER's reachctl download list shows.
job_ids() {
    local user=$1; shift
    as "$user" reachctl download list --json "$@" | python3 -c 'import json, sys; print(" ".join(job["id"] for job in json.load(sys.stdin)))'
}
# alice's job, for the checks that follow (a check runs in a subshell: what it sets does not stay).
alice_job=$(job_ids alice 2>/dev/null)

others_kept_out() {
    local out
    [ -n "$alice_job" ] || { echo "no job of alice's"; return 1; }
    out=$(as bob reachctl download list --transfers-socket "/run/user/$alice_uid/reachd-transfers.sock" 2>&1) \
        && { echo "bob reached alice's socket: $out"; return 1; }
    out=$(X reachctl download list --json --transfers-socket "/run/user/$alice_uid/reachd-transfers.sock" 2>&1) \
        && { echo "alice's instance served root: $out"; return 1; }
    case "$out" in *"$alice_job"*) echo "alice's instance showed root her job: $out"; return 1 ;; esac
    note "root on alice's socket: $out"
    out=$(as bob reachctl download list --json) || { echo "bob's list: $out"; return 1; }
    case "$out" in *"$alice_job"*) echo "bob's list shows alice's job: $out"; return 1 ;; esac
    expect_eq "bob's reachd-transfers.service" "$(uctl bob is-active reachd-transfers.service)" active || return 1
    expect_eq "the user bob's instance runs as" "$(user_of "$(uctl bob show -P MainPID reachd-transfers.service)")" bob
}
check "other users cannot reach a user's instance (bob: no access to the socket; root: refused by the daemon), bob's own instance shows nothing of alice's" others_kept_out

user_fetch() {
    local body
    body=$(as alice reachctl fetch http://192.0.2.1:8080/page.txt --output -) || { echo "fetch: $body"; return 1; }
    expect_eq "body" "$body" "cached body $$" || return 1
    expect_eq "cache directory" "$(owner_mode /home/alice/.cache/reachd)" "alice:alice 700" || return 1
    expect_eq "cached files not alice's" "$(X find /home/alice/.cache/reachd ! -user alice | wc -l)" 0 || return 1
    expect_eq "cached files" "$(X find /home/alice/.cache/reachd -type f | wc -l | awk '$1 > 0 { print "some" }')" some || return 1
    X test ! -e "/var/cache/reachd-transfers/$alice_uid" || { echo "a cache directory of alice's in the system instance's cache"; return 1; }
}
check "a user's reachctl fetch goes through their own cache, ~/.cache/reachd (0700)" user_fetch

session_bus_activation() {
    local out
    [ -n "$alice_job" ] || { echo "no job of alice's"; return 1; }
    uctl alice stop reachd-transfers.service || return 1
    out=$(as alice busctl --user call org.reachd.Transfers1 /org/reachd/Transfers1 org.reachd.Transfers1 List) || { echo "List: $out"; return 1; }
    case "$out" in *"$alice_job"*) ;; *) echo "List on alice's session bus: $out"; return 1 ;; esac
    expect_eq "alice's reachd-transfers.service after a bus call" "$(uctl alice is-active reachd-transfers.service)" active
}
check "D-Bus activation: a call to org.reachd.Transfers1 on a user's session bus starts their stopped instance" session_bus_activation

# --- Transfers as shipped: the system instance ---------------------------------------------------------------
# An administrator's mirror: first a directory the service was not given, then the grant docs/transfers.md
# describes (the group, and a drop-in with ReadWritePaths=).
mirror_refused() {
    X mkdir -p /srv/mirror || return 1
    local out
    out=$(X reachctl download add http://192.0.2.1:8080/file.bin --output /srv/mirror/file.bin 2>&1) \
        && { echo "added without a grant: $out"; return 1; }
    note "before the grant: $out"
    case "$out" in *[Pp]ermission*) ;; *) echo "not a permission error: $out"; return 1 ;; esac
    case "$out" in *"writes as its own user"*ReadWritePaths=DIR*"your own instance"*) ;;
        *) echo "the refusal does not say that the system instance writes as its own user, nor the way out: $out"; return 1 ;; esac
    X test ! -e /srv/mirror/file.bin || { echo "a file was written"; return 1; }
}
check "root's download to a directory not granted to the system instance fails with a permission error" mirror_refused

mirror_granted() {
    X chgrp reachd-transfers /srv/mirror && X chmod 2775 /srv/mirror || return 1
    X mkdir -p /etc/systemd/system/reachd-transfers.service.d || return 1
    X sh -c 'printf "[Service]\nReadWritePaths=/srv/mirror\n" > /etc/systemd/system/reachd-transfers.service.d/mirror.conf' || return 1
    X systemctl daemon-reload && X systemctl restart reachd-transfers.service || return 1
    local job pid
    job=$(X reachctl download add http://192.0.2.1:8080/file.bin --output /srv/mirror/file.bin) || { echo "add: $job"; return 1; }
    X reachctl download wait "$job" --timeout 60 >/dev/null || { X reachctl download show "$job"; return 1; }
    expect_eq "sha256" "$(X sha256sum /srv/mirror/file.bin | cut -d' ' -f1)" "$file_sha" || return 1
    expect_eq "owner and mode" "$(owner_mode /srv/mirror/file.bin)" "reachd-transfers:reachd-transfers 640" || return 1
    pid=$(prop reachd-transfers.service MainPID)
    expect_eq "the user the system instance runs as" "$(user_of "$pid")" reachd-transfers || return 1
    expect_eq "its effective capabilities" "$(X awk '/^CapEff:/ { print $2 }' "/proc/$pid/status")" 0000000000000000
}
check "... and once granted (group reachd-transfers, ReadWritePaths=), the job completes: the file is reachd-transfers', which runs with no capability" mirror_granted

# A new zone under the system instance's sandbox (as timedatectl sets it: a new link renamed over the old): a job
# whose window is open now in Tokyo, and shut in the zone the instance started in (UTC, 9 hours behind), runs.
zone_followed() {
    local old job now window
    old=$(X readlink /etc/localtime) || old=/usr/share/zoneinfo/Etc/UTC
    X sh -c 'ln -sf /usr/share/zoneinfo/Asia/Tokyo /etc/.localtime.new && mv -T /etc/.localtime.new /etc/localtime' || return 1
    now=$(X sh -c 'TZ=Asia/Tokyo date +%s') || return 1
    window="$(X date -u -d "@$((now + 9 * 3600 - 1800))" +%H:%M)-$(X date -u -d "@$((now + 9 * 3600 + 5400))" +%H:%M)"
    job=$(X reachctl download add http://192.0.2.1:8080/file.bin --output /srv/mirror/zone.bin --window "$window") \
        || { echo "add: $job"; X ln -sfT "$old" /etc/localtime; return 1; }
    X reachctl download wait "$job" --timeout 60 >/dev/null || { X reachctl download show "$job"; X ln -sfT "$old" /etc/localtime; return 1; }
    X ln -sfT "$old" /etc/localtime || return 1
    X journalctl -u reachd-transfers.service --no-pager | grep -q "the local time zone changed" \
        || { echo "no zone change in the journal"; return 1; }
}
check "the system instance follows a new zone under its sandbox: a window open in Tokyo, shut in UTC, runs once /etc/localtime says Tokyo" zone_followed

# upload_done WHO JOB: waits for the upload JOB of WHO (alice, or X for root) to complete.
upload_done() {
    local run=(as "$1"); [ "$1" = X ] && run=(X)
    "${run[@]}" reachctl upload wait "$2" --timeout 60 >/dev/null || { "${run[@]}" reachctl upload show "$2"; return 1; }
}
received_sha() { sha256sum "$WORK/received/$1" | cut -d' ' -f1; }
uploads() {
    local job
    job=$(as alice reachctl upload add /home/alice/file.bin --to http://192.0.2.1:8082/alice.bin) || { echo "add: $job"; return 1; }
    upload_done alice "$job" || return 1
    expect_eq "alice's PUT as the server stored it" "$(received_sha alice.bin)" "$file_sha" || return 1
    job=$(as alice reachctl upload add /home/alice/file.bin --to http://192.0.2.1:8082/form --method POST --field who=alice) \
        || { echo "add: $job"; return 1; }
    upload_done alice "$job" || return 1
    expect_eq "alice's multipart POST as the server stored it" "$(received_sha form.file)" "$file_sha" || return 1
    job=$(X reachctl upload add /srv/mirror/file.bin --to http://192.0.2.1:8082/system.bin) || { echo "add: $job"; return 1; }
    upload_done X "$job" || return 1
    expect_eq "root's PUT through the system instance as the server stored it" "$(received_sha system.bin)" "$file_sha"
}
check "uploads over plain http (sendfile) under both sandboxes: alice's PUT and multipart POST from her own instance, root's PUT from the system instance; the server stores every byte" uploads

# The watchdog check at the end needs the system instance to live 70 s with the same process: counted from
# its restart above.
transfers_from=$(date +%s)
transfers_pid=$(prop reachd-transfers.service MainPID)

# Group members use the socket or the system bus (the daemon asks the bus daemon for the groups it recorded,
# GetConnectionCredentials' UnixGroupIDs); the bus policy already stops everyone else.
group_access() {
    local out
    X usermod -aG reachd-transfers carol || return 1
    out=$(as carol reachctl download list --system --json) || { echo "carol's list: $out"; return 1; }
    out=$(as carol reachctl fetch http://192.0.2.1:8080/page.txt --output - --system) || { echo "carol's fetch: $out"; return 1; }
    expect_eq "carol's fetch through the system instance's cache" "$out" "cached body $$" || return 1
    out=$(as bob reachctl download list --system 2>&1) && { echo "bob was served: $out"; return 1; }
    note "bob on the system instance: $out"
    case "$out" in *"not allowed"*reachd-transfers*|*reachd-transfers*"not allowed"*) ;; *) echo "not a clear refusal: $out"; return 1 ;; esac
    out=$(X busctl call org.reachd.Transfers1 /org/reachd/Transfers1 org.reachd.Transfers1 List 2>&1) || { echo "root on the system bus: $out"; return 1; }
    out=$(as carol busctl call org.reachd.Transfers1 /org/reachd/Transfers1 org.reachd.Transfers1 List 2>&1) || { echo "carol on the system bus: $out"; return 1; }
    out=$(as bob busctl call org.reachd.Transfers1 /org/reachd/Transfers1 org.reachd.Transfers1 List 2>&1) \
        && { echo "the system bus let bob call: $out"; return 1; }
    case "$out" in *[Aa]ccess*[Dd]enied*) ;; *) echo "bob on the system bus: $out"; return 1 ;; esac
}
check "the system instance serves members of group reachd-transfers (list, fetch through its cache) and refuses others clearly; on the system bus root and members are served, others denied by the bus" group_access

state_where_documented() {
    expect_eq "state directory" "$(owner_mode /var/lib/reachd-transfers)" "reachd-transfers:reachd-transfers 700" || return 1
    X test -f /var/lib/reachd-transfers/jobs.sqlite || { echo "no /var/lib/reachd-transfers/jobs.sqlite"; return 1; }
    expect_eq "cache directory" "$(owner_mode /var/cache/reachd-transfers)" "reachd-transfers:reachd-transfers 711" || return 1
    expect_eq "reachd's own state directory" "$(owner_mode /var/lib/reachd)" "reachd:reachd 755" || return 1
    X test ! -e /var/lib/reachd/jobs.sqlite || { echo "the job table is in reachd's directory"; return 1; }
}
check "the system instance's state and cache where docs/transfers.md says (its own: 0700, 0711), never in reachd's directory" state_where_documented
