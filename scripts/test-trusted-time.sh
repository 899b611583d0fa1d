#!/usr/bin/env bash
# Trusted time for real: a TrustedClock synced by SNTP from chrony on loopback,
# in a process whose wall clock faketime puts an hour behind.
#
#   scripts/test-trusted-time.sh
#
# What it does, never touching the machine's clock:
#   1. installs chrony and faketime from Debian if missing (with a
#      policy-rc.d in place, so that installing chrony does not start the
#      system's NTP service);
#   2. builds `timerkit` (or uses $TK_TIMERKIT, a built binary);
#   3. starts `chronyd -x` (-x: never adjust the system clock) on a free UDP
#      port of 127.0.0.1, and of ::1 too if the loopback has IPv6, with
#      `local stratum 8`, pidfile and driftfile in a temporary directory;
#      stops it on exit, whatever happens; checks that it answers on every
#      address `localhost` resolves to, so whichever comes first answers;
#   4. runs `timerkit trusted-time` (the probe), reaching chrony by name as
#      `--server localhost` (tk_sntp_query resolves it), without faketime as
#      a control,
#      then under `faketime -f -1h` with FAKETIME_DONT_FAKE_MONOTONIC=1 (only
#      the wall clock is shifted; the boot clock stays real), then again under
#      `-2h` restoring the saved state without syncing (a restart in the same
#      boot, with the clock set back a second hour meanwhile), then under
#      `+70y` and `+300y` (the server's time read in its own era, whatever
#      the wall clock);
#   5. reads the real time outside faketime (`timerkit trusted-time --clocks`:
#      the boot and wall clocks back to back) and checks that trusted time
#      agrees with it within the reported error bound, that the probe really
#      saw a shifted wall clock and an unshifted boot clock, and that the
#      wall-clock change (tamper) detection reported the hour.
#
# Every comparison of two clock readings allows exactly the error bound the
# clock reported plus the measured gaps between the reads it brackets; no
# other slack.
#
# Environment:
#   TK_TIMERKIT   path of a built timerkit binary (default: swift build)
#
# Prints `N passed, N failed` last; exits non-zero if anything failed.

set -Eeuo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    PATH="/opt/swift/usr/bin:$PATH"
fi

WORK=""
CHRONY_PID=""

log() { echo "test-trusted-time: $*"; }
# shellcheck source=scripts/lib/test-harness.sh
. scripts/lib/test-harness.sh

cleanup() {
    if [ -n "$CHRONY_PID" ] && kill -0 "$CHRONY_PID" 2>/dev/null; then
        kill "$CHRONY_PID" 2>/dev/null || true
        wait "$CHRONY_PID" 2>/dev/null || true
    fi
    if [ -n "$WORK" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- packages -----------------------------------------------------------------

install_packages() {
    local missing=() package
    for package in chrony faketime; do
        package_installed "$package" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null 2>&1 || { log "not Debian: install ${missing[*]} by hand"; return 1; }
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || { log "need root to install ${missing[*]}"; return 1; }
        sudo=(sudo)
    fi
    # Keep the package from starting the system's chronyd, which would
    # discipline the machine's clock: invoke-rc.d asks policy-rc.d first.
    local policy=/usr/sbin/policy-rc.d made_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
        "${sudo[@]}" chmod 755 "$policy"
        made_policy=1
    fi
    log "installing ${missing[*]}"
    local status=0
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq || status=$?
    if [ $status -eq 0 ]; then
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends "${missing[@]}" || status=$?
    fi
    if [ $made_policy -eq 1 ]; then "${sudo[@]}" rm -f "$policy"; fi
    return $status
}

install_packages || abort "chrony and faketime installed"
CHRONYD=$(command -v chronyd || echo /usr/sbin/chronyd)
[ -x "$CHRONYD" ] || abort "chronyd found"
command -v faketime >/dev/null 2>&1 || abort "faketime found"
log "$("$CHRONYD" -v | head -n 1); faketime $(dpkg-query -W -f='${Version}' faketime 2>/dev/null || echo '?')"

# --- the probe ------------------------------------------------------------------

if [ -n "${TK_TIMERKIT:-}" ]; then
    TIMERKIT=$TK_TIMERKIT
else
    log "swift build --product timerkit"
    swift build --product timerkit >/dev/null || abort "timerkit builds"
    TIMERKIT="$(swift build --show-bin-path)/timerkit"
fi
[ -x "$TIMERKIT" ] || abort "timerkit binary at $TIMERKIT"
"$TIMERKIT" trusted-time --clocks >/dev/null 2>&1 ||
    abort "timerkit has the trusted-time command ($TIMERKIT)"

# --- JSON fields (the probe prints one line with simple, unique keys) ----------

# field JSON KEY: the number (or string, true, false, null) after "KEY":
field() {
    local value
    value=$(sed -n 's/.*"'"$2"'": \("[^"]*"\|-\{0,1\}[0-9][0-9]*\|true\|false\|null\).*/\1/p' <<<"$1" | head -n 1)
    value=${value#\"}
    echo "${value%\"}"
}

# object JSON KEY: the text of the flat object under "KEY".
object() { sed -n 's/.*"'"$2"'": {\([^}]*\)}.*/\1/p' <<<"$1" | head -n 1; }

# changes JSON: the wall_clock_changes array's text.
changes() { sed -n 's/.*"wall_clock_changes": \[\(.*\)\], "needs_sync".*/\1/p' <<<"$1"; }

abs() { local v=$1; echo $((v < 0 ? -v : v)); }

is_number() { [[ "$1" =~ ^-?[0-9]+$ ]]; }

# The real wall clock, read outside faketime, at boot-clock reading $1:
# sets REAL_AT and REAL_SLOP (half the gap of the two boot reads around the
# wall read).
real_wall_at() {
    local clocks boot_a boot_b wall
    clocks=$("$TIMERKIT" trusted-time --clocks)
    boot_a=$(field "$clocks" boot_ns)
    boot_b=$(field "$clocks" boot_after_ns)
    wall=$(field "$clocks" wall_ns)
    local middle=$(((boot_a + boot_b) / 2))
    REAL_AT=$((wall - (middle - $1)))
    REAL_SLOP=$(((boot_b - boot_a + 1) / 2 + 1))
    REAL_BOOT=$boot_a
}

# check_trusted_agrees LABEL: checks that the trusted time in the probe's
# report ($OUT) is the real time within the error bound it reported plus the
# gaps between the reads it brackets; sets `error` to that bound.
check_trusted_agrees() {
    local boot gap trusted diff
    boot=$(field "$OUT" boot_ns)
    gap=$(($(field "$OUT" boot_after_ns) - boot))
    trusted=$(field "$OUT" trusted_ns)
    error=$(field "$OUT" trusted_error_ns)
    real_wall_at "$boot"
    diff=$((trusted - REAL_AT))
    echo "      trusted - real = $diff ns; error bound $error ns; read gaps $gap + $REAL_SLOP ns"
    check "$1: trusted time agrees with the real time within the error bound" \
        test "$(abs "$diff")" -le $((error + gap + REAL_SLOP))
}

# --- chronyd ----------------------------------------------------------------------

WORK=$(mktemp -d /tmp/timerkit-trusted-time.XXXXXX)
chmod 755 "$WORK"
# chronyd drops root to its own user; its files must be writable by it.
if id _chrony >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then chown _chrony: "$WORK"; fi

# A UDP port nothing on the machine uses (from /proc/net/udp{,6}).
free_port() {
    local used port
    used=$(for table in /proc/net/udp /proc/net/udp6; do
        [ -r "$table" ] && tail -n +2 "$table"
    done | while read -r _ address _; do echo $((16#${address##*:})); done | sort -u)
    for _ in $(seq 1 100); do
        port=$((20000 + RANDOM % 40000))
        grep -qx "$port" <<<"$used" || { echo "$port"; return 0; }
    done
    return 1
}

# Whether the loopback has ::1 (else chronyd cannot bind it).
has_ipv6_loopback() {
    [ -r /proc/net/if_inet6 ] && grep -q '^00000000000000000000000000000001 ' /proc/net/if_inet6
}

start_chronyd() {
    PORT=$(free_port) || return 1
    # Both loopbacks, so that `localhost` answers on whichever address
    # getaddrinfo gives first (::1 first on most machines).
    local ipv6=""
    has_ipv6_loopback && ipv6=$'bindaddress ::1\nallow ::1'
    cat >"$WORK/chrony.conf" <<EOF
port $PORT
bindaddress 127.0.0.1
allow 127.0.0.1
$ipv6
local stratum 8
cmdport 0
bindcmdaddress /
pidfile $WORK/chronyd.pid
driftfile $WORK/chrony.drift
EOF
    "$CHRONYD" -n -x -f "$WORK/chrony.conf" -l "$WORK/chronyd.log" &
    CHRONY_PID=$!
    # Ready when it answers an SNTP request (not before: it may fail to bind).
    local reply
    for _ in $(seq 1 50); do
        kill -0 "$CHRONY_PID" 2>/dev/null || return 1
        if reply=$("$TIMERKIT" trusted-time --server 127.0.0.1 --port "$PORT" --samples 1 \
            --timeout-ms 200 --json 2>/dev/null) && [ "$(field "$reply" synced)" = true ]; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

started=0
for _ in 1 2 3; do
    if start_chronyd; then
        started=1
        break
    fi
    cleanup_pid=$CHRONY_PID
    kill "$cleanup_pid" 2>/dev/null || true
    wait "$cleanup_pid" 2>/dev/null || true
    CHRONY_PID=""
done
if [ $started -eq 0 ]; then
    [ -f "$WORK/chronyd.log" ] && sed 's/^/chronyd: /' "$WORK/chronyd.log"
    abort "chronyd -x answers SNTP on 127.0.0.1"
fi
pass "chronyd -x answers SNTP on 127.0.0.1:$PORT (pid $CHRONY_PID)"
grep -q "Disabled control of system clock" "$WORK/chronyd.log" &&
    pass "chronyd reports: control of the system clock disabled" ||
    fail "chronyd reports: control of the system clock disabled"

# The probe reaches chrony as `localhost`. tk_sntp_query tries its addresses
# in getaddrinfo's order and asks the first that answers for every sample; so
# that the counts below are exact, chrony must answer on each of them.
LOCALHOST_ADDRESSES=$(getent ahosts localhost | awk '$2 == "DGRAM" { print $1 }' | awk '!seen[$0]++' || true)
log "localhost resolves to: $(tr '\n' ' ' <<<"$LOCALHOST_ADDRESSES")"
[ -n "$LOCALHOST_ADDRESSES" ] || abort "localhost resolves (getent ahosts localhost)"
for address in $LOCALHOST_ADDRESSES; do
    if [[ "$address" == *:* ]] && ! has_ipv6_loopback; then
        # tk_sntp_query cannot connect there either, and moves on at once.
        log "$address: no IPv6 loopback here, chronyd does not listen there"
        continue
    fi
    if reply=$("$TIMERKIT" trusted-time --server "$address" --port "$PORT" --samples 1 \
        --timeout-ms 1000 --json 2>/dev/null) && [ "$(field "$reply" synced)" = true ]; then
        pass "chronyd answers on $address, an address of localhost"
    else
        fail "chronyd answers on $address, an address of localhost (output: ${reply:-none})"
    fi
done

probe() {
    "$TIMERKIT" trusted-time --server localhost --port "$PORT" --samples 4 --timeout-ms 1000 --json "$@"
}

# Runs the probe (arguments: faketime's offset or "", then probe options).
# Sets OUT; returns the probe's status.
run_probe() {
    local shift_by=$1
    shift
    if [ -n "$shift_by" ]; then
        OUT=$(FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "$shift_by" "$TIMERKIT" trusted-time "$@")
    else
        OUT=$("$TIMERKIT" trusted-time "$@")
    fi
}

# --- 1. control: no faketime ---------------------------------------------------

echo
log "control run, real wall clock"
if OUT=$(probe) && [ "$(field "$OUT" synced)" = true ]; then
    pass "control: the probe syncs from chrony as localhost"
else
    abort "control: the probe syncs from chrony as localhost (output: ${OUT:-none})"
fi
echo "      $OUT"
sntp=$(object "$OUT" sntp)
stratum=$(field "$sntp" stratum)
check "control: chrony's stratum is 1..15 (got $stratum)" \
    test "$stratum" -ge 1 -a "$stratum" -le 15
error=$(field "$OUT" trusted_error_ns)
gap=$(($(field "$OUT" boot_after_ns) - $(field "$OUT" boot_ns)))
offset=$(field "$OUT" wall_minus_trusted_ns)
check "control: wall - trusted = $offset ns, within the error bound $error ns + read gap $gap ns" \
    test "$(abs "$offset")" -le $((error + gap))
check "control: no wall-clock change reported" test -z "$(changes "$OUT")"

# --- 2. faketime -1h ----------------------------------------------------------------

echo
log "faketime -1h (FAKETIME_DONT_FAKE_MONOTONIC=1)"
STATE=$WORK/trusted.state
before=$("$TIMERKIT" trusted-time --clocks)
if run_probe "-1h" --server localhost --port "$PORT" --samples 4 --timeout-ms 1000 --json \
    --state "$STATE" && [ "$(field "$OUT" synced)" = true ]; then
    pass "faketime: the probe syncs from chrony"
else
    abort "faketime: the probe syncs from chrony (output: ${OUT:-none})"
fi
echo "      $OUT"
probe_boot=$(field "$OUT" boot_ns)
probe_boot_after=$(field "$OUT" boot_after_ns)
probe_wall=$(field "$OUT" wall_ns)
trusted=$(field "$OUT" trusted_ns)
error=$(field "$OUT" trusted_error_ns)
gap=$((probe_boot_after - probe_boot))
real_wall_at "$probe_boot"
for value in "$probe_boot" "$probe_wall" "$trusted" "$error" "$REAL_AT"; do
    is_number "$value" || abort "faketime: the probe's report has every number"
done

# The probe's boot clock is the real one: between two readings taken outside.
check "faketime: the probe's boot clock is not shifted ($(field "$before" boot_ns) <= $probe_boot <= $REAL_BOOT)" \
    test "$(field "$before" boot_ns)" -le "$probe_boot" -a "$probe_boot" -le "$REAL_BOOT"
# Its wall clock is an hour behind the real one (libfaketime's offset is exact;
# the reads around it are microseconds apart).
shifted=$((probe_wall - REAL_AT))
check "faketime: the probe's wall clock is shifted by $shifted ns (-1 h)" \
    test "$(abs $((shifted + 3600000000000)))" -le $((gap + REAL_SLOP + 1000000))

# Trusted time is the real time, within the reported error bound.
diff=$((trusted - REAL_AT))
echo "      trusted - real = $diff ns; error bound $error ns; read gaps $gap + $REAL_SLOP ns"
check "faketime: trusted time agrees with the real time within the error bound" \
    test "$(abs "$diff")" -le $((error + gap + REAL_SLOP))
check "faketime: the error bound is sane (0 < $error ns < 50 ms)" \
    test "$error" -gt 0 -a "$error" -lt 50000000

sntp=$(object "$OUT" sntp)
sntp_offset=$(field "$sntp" offset_ns)
sntp_error=$(field "$sntp" error_bound_ns)
check "faketime: SNTP offset $sntp_offset ns is +1 h within its error bound $sntp_error ns" \
    test "$(abs $((sntp_offset - 3600000000000)))" -le "$sntp_error"
check "faketime: 4 requests, 4 replies accepted" \
    test "$(field "$sntp" requests_sent)" = 4 -a "$(field "$sntp" replies_accepted)" = 4

# Tamper detection: the sync reports the wall clock an hour behind.
list=$(changes "$OUT")
echo "      wall-clock changes: [$list]"
count=$(grep -o '"cause"' <<<"$list" | wc -l)
change=$(field "$list" change_ns)
change_offset=$(field "$list" offset_ns)
check "faketime: one wall-clock change reported, by the sync" \
    test "$count" -eq 1 -a "$(field "$list" cause)" = sync
check "faketime: the change is -1 h (got $change ns)" \
    test "$(abs $((change + 3600000000000)))" -le $((sntp_error + 1000000))
check "faketime: wall - trusted is -1 h (got $(field "$OUT" wall_minus_trusted_ns) ns)" \
    test "$(abs $(($(field "$OUT" wall_minus_trusted_ns) + 3600000000000)))" -le $((error + gap + 1000000))
check "faketime: the state was saved" test -s "$STATE"

# --- 3. restart in the same boot, the clock set back another hour, no sync ------

echo
log "restart: faketime -2h, restore the saved state, no sync"
run_probe "-2h" --no-sync --json --state "$STATE" || true
echo "      $OUT"
check "restart: the saved state is restored" \
    test "$(field "$OUT" restore)" = "restored 1 sample"
check "restart: trusted time continues without a sync" test "$(field "$OUT" synced)" = true
check_trusted_agrees restart
list=$(changes "$OUT")
echo "      wall-clock changes: [$list]"
change=$(field "$list" change_ns)
check "restart: a check reports the wall clock set back another hour (got $change ns)" \
    test "$(field "$list" cause)" = check -a "$(abs $((change + 3600000000000)))" -le 1000000000
check "restart: the clock asks for a sync after the change" test "$(field "$OUT" needs_sync)" = true

# --- 3a. the wall clock set 70 and 300 years ahead -----------------------------------

# An NTP timestamp names a time only within an era of 136 years: the server's
# time must not be read in the era of a wall clock set decades ahead (70
# years ahead once read it 136 years late), nor fail past 2262 (where the
# wall clock's reading in nanoseconds saturates).
for ahead in 70y 300y; do
    echo
    log "faketime +$ahead"
    if run_probe "+$ahead" --server localhost --port "$PORT" --samples 4 --timeout-ms 1000 --json &&
        [ "$(field "$OUT" synced)" = true ]; then
        pass "+$ahead: the probe syncs from chrony"
    else
        fail "+$ahead: the probe syncs from chrony (output: ${OUT:-none})"
        continue
    fi
    echo "      $OUT"
    check_trusted_agrees "+$ahead"
    check "+$ahead: the error bound is sane (0 < $error ns < 50 ms)" \
        test "$error" -gt 0 -a "$error" -lt 50000000
    check "+$ahead: one wall-clock change reported, by the sync" \
        test "$(grep -o '"cause"' <<<"$(changes "$OUT")" | wc -l)" -eq 1
done

# --- 3b. state files: one it cannot restore is left as it is; a link is replaced --

echo
log "state files: a foreign file, a symbolic link"
FOREIGN=$WORK/notes.txt
printf 'precious notes\n' >"$FOREIGN"
# probe_state FILE: one sample, with --state FILE; sets OUT and STATUS.
probe_state() {
    STATUS=0
    run_probe "" --server localhost --port "$PORT" --samples 1 --timeout-ms 1000 --json --state "$1" ||
        STATUS=$?
    echo "      $OUT"
}
probe_state "$FOREIGN"
check "a foreign --state file: status 1 (got $STATUS)" test "$STATUS" -eq 1
check "a foreign --state file: not restored" \
    test "$(field "$OUT" restore)" = "error: not a TimerKit trusted-time state file"
check "a foreign --state file: not saved over, and said so" \
    test "$(field "$OUT" save_error)" = "not saved: the file could not be restored, and is left as it is"
check "a foreign --state file: left as it was" test "$(cat "$FOREIGN")" = "precious notes"
# Not a regular file: named for what it is (the library refuses it with
# EINVAL), left as it is. A path through a regular file names nothing, so
# nothing is said to be left.
mkfifo "$WORK/fifo.state"
probe_state "$WORK/fifo.state"
check "a FIFO --state: status 1 (got $STATUS), named as a FIFO" \
    test "$STATUS" -eq 1 -a "$(field "$OUT" restore)" = "error: not a regular file: it is a FIFO"
check "a FIFO --state: not saved over, and still a FIFO" \
    test "$(field "$OUT" save_error)" = "not saved: the file could not be restored, and is left as it is" -a -p "$WORK/fifo.state"
probe_state "$FOREIGN/x"
check "a --state path through a file: status 1 (got $STATUS), not saved, no file said to be left" \
    test "$STATUS" -eq 1 -a "$(field "$OUT" save_error)" = "not saved: the file could not be restored"
LINK=$WORK/link.state
ln -s trusted.state "$LINK"
before=$(cksum <"$STATE")
run_probe "" --server localhost --port "$PORT" --samples 1 --timeout-ms 1000 --json --state "$LINK" || true
echo "      $OUT"
check "at a link: restored through it, and saved" \
    test "$(field "$OUT" restore)" = "restored 1 sample" -a "$(field "$OUT" saved)" = "$LINK"
check "at a link: the link was replaced by the state file" test -f "$LINK" -a ! -L "$LINK"
check "at a link: the file it led to was left as it was" test "$(cksum <"$STATE")" = "$before"

# --- 4. chronyd gone --------------------------------------------------------------

echo
log "chronyd stopped"
kill "$CHRONY_PID"
wait "$CHRONY_PID" 2>/dev/null || true
check "chronyd has exited" bash -c "! kill -0 $CHRONY_PID 2>/dev/null"
CHRONY_PID=""
status=0
OUT=$(probe --samples 1) || status=$?
check "no server: the probe of localhost fails (status $status): $(field "$OUT" sync_error)" \
    test "$status" -ne 0 -a "$(field "$OUT" synced)" = false

echo
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
