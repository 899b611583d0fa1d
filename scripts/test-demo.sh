#!/usr/bin/env bash
# `timerkit demo` used as a person uses it: in a terminal (tmux), keys sent
# with `send-keys`, the screen read back with `capture-pane`.
#
#   scripts/test-demo.sh
#
# What it checks, never touching the machine's clock:
#   1. the flash sale counts down from the server's "remaining seconds",
#      reaches "started" and reloads the page exactly once;
#   2. `s` sends a code and starts its cooldown; a second `s` is refused
#      with the time left, which counts down with the Code line's, and
#      goes when the cooldown ends;
#   3. `d` starts a drag (the loop runs in tracking mode): the carousel keeps
#      turning while the badge (default mode) waits; `d` again ends it and
#      the badge fires once, reporting the refreshes it skipped;
#   4. `q` quits with status 0; started again with the same state file, the
#      demo shows the code's cooldown still running, with less time left;
#   5. under libfaketime (only the wall clock faked), the wall clock stepped
#      two days forward and then five days back while the demo runs: the
#      screen shows the faked wall clock, and neither the sale nor the
#      cooldown moves; restarted under the stepped clock, the cooldown is
#      restored with its true time left;
#   6. the frame line: a 30 Hz frame ticker redraws the screen and its
#      monitor shows the measured fps, p99 frame time, drops and hitches,
#      also during the drag; two presses of d read together (a paste)
#      both count;
#   7. `--print-after` under `faketime -f +1d` and `-30d` prints the sale's
#      true time left, and under `faketime 1960-01-01` the wall clock's
#      second rounded down; under libfaketime faking the monotonic clock
#      too, the demo refuses to start, saying why; bad options (values out of range too), a corrupt
#      state file (left as it is, never saved over, and said at exit with
#      status 1, also after `s`; a FIFO's save failure names it), an unwritable state file (a cooldown not saved is shown,
#      and said at exit with status 1), a missing terminal (standard
#      input or output) and a dumb one (TERM=dumb) give clear messages,
#      never a crash; a state path
#      with control characters (a newline, ESC, a C1 CSI) is shown with
#      them escaped, on the screen and on standard error;
#   8. the ways out a program sees put the terminal back (cooked mode, the
#      cursor shown, lines wrapping): SIGTERM, SIGHUP and SIGINT end the demo
#      with the signal's status; Ctrl-Z in an interactive shell stops it, and
#      `fg` brings it back in raw mode, drawing and taking keys; stopped and
#      then ended by the shell's `kill %1` (SIGTERM and SIGCONT), it ends; after
#      `bg` it runs on without drawing or reading keys, leaving the terminal
#      to the shell, until `fg` brings it back in raw mode, and `kill %1` ends
#      it there too; left in the background, stopped or running, by a shell
#      that is gone, it quits and says why; so does going
#      on after a SIGSTOP during which the terminal was reset; its window
#      closed while it ignores SIGHUP, it quits and says it cannot write; a window
#      smaller than the screen shows its first lines, cut at the edge, never
#      scrolled; a state path of CJK characters (two columns each) or of
#      combining accents (none) in a message is cut by columns, its row the
#      message's first columns, whole.
#
# Waits poll the screen until what is expected shows up or a generous time
# limit passes; nothing asserts how fast the machine is.
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

TEST_NAME=test-demo
TEST_PACKAGES="tmux faketime"
# shellcheck source=scripts/lib/terminal-test.sh
. scripts/lib/terminal-test.sh

command -v faketime >/dev/null 2>&1 || abort "faketime found"
LIBFAKETIME=$(dpkg-query -L libfaketime 2>/dev/null | grep '/libfaketime\.so\.1$' | head -n 1 || true)
[ -n "$LIBFAKETIME" ] && [ -f "$LIBFAKETIME" ] || abort "libfaketime.so.1 found"
log "faketime $(dpkg-query -W -f='${Version}' faketime 2>/dev/null || echo '?')"

# --- 1-4: a session on the real clock ------------------------------------------------

STATE="$WORK/demo.state"
DEMO=("$TIMERKIT" demo --state "$STATE" --sale-seconds 3 --code-seconds 120)
start "${DEMO[@]}"

if wait_for '^Flash sale   starts in 00:00:0[0-3]$'; then
    pass "the sale counts down from the server's remaining seconds ($LINE)"
else
    fail "the sale counts down from the server's remaining seconds"
fi
FRAMES='^Frames       ([0-9]+\.[0-9]) fps, p99 [0-9]+\.[0-9] ms, [0-9]+ dropped, hitch [0-9]+\.[0-9] ms/s \((good|warning|critical)\)'
if wait_for "$FRAMES"; then
    fps=$(field "$FRAMES.*")
    check "the frame line shows the screen's measured rate ($fps fps)" awk "BEGIN { exit !($fps > 0) }"
else
    fail "the frame line shows the screen's measured rate"
fi
check "the sale starts and reloads the page once" wait_for '^Flash sale   started; the page reloaded 1 time$'
sleep 1.5
check "the page still reloaded exactly once" wait_for '^Flash sale   started; the page reloaded 1 time$' 1

keys s
if wait_for '^Code         sent; resend in [0-9]+ s$' && wait_for '^code sent$' 2; then
    first_left=$(field '^Code         sent; resend in ([0-9]+) s$')
    check "s sends a code: a cooldown of at most 120 s ($first_left s)" test "$first_left" -le 120 -a "$first_left" -gt 0
else
    first_left=""
    fail "s sends a code"
fi
keys s
check "a second s is refused with the time left" wait_for '^wait [0-9]+ s before sending another code$'

wait_for '^Badge        refreshed [1-9][0-9]* times?' >/dev/null || true
turns_before=$(field '^Carousel     page [1-5] of 5, turned ([0-9]+) times?.*')
keys d
if wait_for '^Drag         dragging: the loop runs in tracking mode$'; then
    badge_during=$(field '^Badge        refreshed ([0-9]+) times?.*')
    turns_during=$(field '^Carousel     page [1-5] of 5, turned ([0-9]+) times?.*')
    sleep 3
    badge_late=$(field '^Badge        refreshed ([0-9]+) times?.*')
    turns_late=$(field '^Carousel     page [1-5] of 5, turned ([0-9]+) times?.*')
    check "the carousel turns during the drag ($turns_during -> $turns_late turns in 3 s)" \
        test "$turns_late" -gt "$turns_during"
    check "the badge waits during the drag ($badge_during -> $badge_late refreshes in 3 s)" \
        test "$badge_late" -eq "$badge_during"
    # The frame ticker is in the common modes: its frames keep coming.
    frame_during=$(field '^Ticker       frame ([0-9]+) of a 30 Hz ticker.*')
    sleep 1
    frame_later=$(field '^Ticker       frame ([0-9]+) of a 30 Hz ticker.*')
    check "frames keep coming during the drag (frame $frame_during -> $frame_later in 1 s)" \
        test "$frame_later" -gt "$frame_during"
    keys d
    if wait_for '^Drag         not dragging$' &&
        wait_for '^Badge        refreshed [0-9]+ times?, [1-9][0-9]* skipped' 5; then
        badge_after=$(field '^Badge        refreshed ([0-9]+) times?.*')
        skipped=$(field '^Badge        refreshed [0-9]+ times?, ([0-9]+) skipped.*')
        # Each refresh after the drag comes a second apart: one more than
        # during the drag (the coalesced one), or two if the screen was read
        # late; never one per skipped refresh.
        check "the badge fires once after the drag, $skipped skipped ($badge_late -> $badge_after)" \
            test "$badge_after" -le $((badge_late + 2)) -a "$skipped" -ge 1
    else
        fail "the drag ends and the badge reports what it skipped"
    fi
    check "the carousel had turned before the drag" test -n "$turns_before"
else
    fail "d starts a drag"
fi

# Two presses of d that come in one read (a paste, key repeat) both count:
# the drag starts and ends, or, during one, ends and starts again. Each is
# judged once ten more frames have been drawn.
frames_drawn() {
    local first waited=0 now
    first=$(field '^Ticker       frame ([0-9]+) of a 30 Hz ticker.*')
    while [ "$waited" -lt 300 ]; do
        now=$(field '^Ticker       frame ([0-9]+) of a 30 Hz ticker.*')
        [ -n "$first" ] && [ -n "$now" ] && [ "$now" -ge $((first + $1)) ] && return 0
        sleep 0.1
        waited=$((waited + 1))
    done
    return 1
}
keys -l dd
frames_drawn 10 || true
check "d d read together start and end a drag" wait_for '^Drag         not dragging$' 1
keys d
if wait_for '^Drag         dragging: the loop runs in tracking mode$'; then
    keys -l dd
    frames_drawn 10 || true
    check "d d read together during a drag end it and start another" \
        wait_for '^Drag         dragging: the loop runs in tracking mode$' 1
    keys d
    check "then d ends the drag" wait_for '^Drag         not dragging$'
else
    fail "d starts a drag again"
fi

keys q
check "q quits with status 0" wait_for '^program exited with 0$' 10

start "${DEMO[@]}"
if wait_for '^Code         sent; resend in [0-9]+ s$' && [ -n "$first_left" ]; then
    left_again=$(field '^Code         sent; resend in ([0-9]+) s$')
    check "restarted, the cooldown is still running ($first_left s -> $left_again s)" \
        test "$left_again" -lt "$first_left" -a "$left_again" -gt 0
else
    fail "restarted, the cooldown is still running"
fi
check "restarted, the demo says it restored the cooldown" wait_for "^restored the code's cooldown$" 2
keys s
check "restarted, s is still refused" wait_for '^wait [0-9]+ s before sending another code$'
keys q
check "q quits again" wait_for '^program exited with 0$' 10

# The messages about the code go with its cooldown: the time a refused s
# gives counts down with the Code line's, and they go when it ends.
start "$TIMERKIT" demo --state "$WORK/short.state" --sale-seconds 60 --code-seconds 10
wait_for '^Code         press s to send a code$' >/dev/null || true
keys s
check "a 10 s code: s sends it" wait_for '^code sent$'
keys s
if wait_for '^wait [0-9]+ s before sending another code$' 2; then
    sleep 1.5
    agreed=""
    for _ in 1 2 3 4 5; do
        code_left=$(field '^Code         sent; resend in ([0-9]+) s$')
        wait_left=$(field '^wait ([0-9]+) s before sending another code$')
        if [ -n "$code_left" ] && [ "$code_left" = "$wait_left" ]; then
            agreed=$code_left
            break
        fi
        sleep 0.2
    done
    check "a second later, the refusal's time left is the Code line's ($code_left s, $wait_left s)" test -n "$agreed"
else
    fail "a second s is refused"
fi
check "the cooldown ends: the Code line says so" wait_for '^Code         press s to send a code$' 20
check "... and the refusal is gone, no line saying to wait" \
    bash -c '! grep -qE "^(wait [0-9]+ s before sending another code|code sent)$" <<<"$1"' _ "$(screen)"
keys q
check "q quits" wait_for '^program exited with 0$' 10

# --- 5: the wall clock stepped under the running demo (libfaketime) ---------------------

# libfaketime reads FAKETIME_TIMESTAMP_FILE on every clock read
# (FAKETIME_NO_CACHE=1), so writing the file steps the demo's wall clock.
# FAKETIME_DONT_FAKE_MONOTONIC=1 leaves the boot and monotonic clocks real,
# as they are when a user changes the clock. FAKETIME_SHARED is set ahead:
# libfaketime otherwise adds it to the environment while the process starts,
# and a Swift program then sees no command-line arguments.
FAKE_FILE="$WORK/faketime.rc"
FAKE_STATE="$WORK/fake.state"
echo "+0" >"$FAKE_FILE"
FAKED=(env "LD_PRELOAD=$LIBFAKETIME" "FAKETIME_TIMESTAMP_FILE=$FAKE_FILE" FAKETIME_NO_CACHE=1
    FAKETIME_DONT_FAKE_MONOTONIC=1 "FAKETIME_SHARED=/timerkit-demo-test-$$-sem /timerkit-demo-test-$$-shm")
FAKED_DEMO=("${FAKED[@]}" "$TIMERKIT" demo --state "$FAKE_STATE" --sale-seconds 3600 --code-seconds 3600)

wall_seconds() {
    local text
    text=$(field '^Wall clock   ([0-9-]+ [0-9:]+) UTC.*')
    [ -n "$text" ] && date -u -d "$text" +%s
}
sale_seconds() {
    local text
    text=$(field '^Flash sale   starts in ([0-9:]+)$')
    [ -n "$text" ] && IFS=: read -r h m s <<<"$text" && echo $((10#$h * 3600 + 10#$m * 60 + 10#$s))
}
code_seconds() { field '^Code         sent; resend in ([0-9]+) s$'; }

start "${FAKED_DEMO[@]}"
if wait_for '^Flash sale   starts in ' && wait_for '^Wall clock   '; then
    keys s
    wait_for '^Code         sent; resend in [0-9]+ s$' >/dev/null || true
    real_now=$(date -u +%s)
    wall0=$(wall_seconds)
    sale0=$(sale_seconds)
    code0=$(code_seconds)
    check "under libfaketime, the demo runs with the real wall clock first" \
        test -n "$wall0" -a -n "$sale0" -a -n "$code0" -a "$((wall0 - real_now))" -lt 120 -a "$((real_now - wall0))" -lt 120
    step=0
    for offset in "+2d" "-5d"; do
        step=$((step + 1))
        echo "$offset" >"$FAKE_FILE"
        days=${offset%d}
        expect_wall=$((wall0 + days * 86400))
        moved=0
        for _ in $(seq 1 100); do
            wall=$(wall_seconds || true)
            if [ -n "$wall" ] && [ "$((wall - expect_wall))" -gt -600 ] && [ "$((wall - expect_wall))" -lt 600 ]; then
                moved=1
                break
            fi
            sleep 0.2
        done
        check "the wall clock stepped $offset on the screen" test "$moved" -eq 1
        sale=$(sale_seconds || true)
        code=$(code_seconds || true)
        # The step is days; the sale and the cooldown may only have counted
        # down by the seconds that really passed.
        check "after $offset the sale did not move ($sale0 s -> $sale s)" \
            test -n "$sale" -a "$sale" -le "$sale0" -a "$((sale0 - sale))" -lt 600
        check "after $offset the cooldown did not move ($code0 s -> $code s)" \
            test -n "$code" -a "$code" -le "$code0" -a "$((code0 - code))" -lt 600
    done
    keys q
    check "q quits under libfaketime" wait_for '^program exited with 0$' 10
    # Started again with the wall clock five days back: same boot, so the
    # boot clock decides what is left.
    start "${FAKED_DEMO[@]}"
    if wait_for '^Code         sent; resend in [0-9]+ s$'; then
        code=$(code_seconds)
        check "restarted under the stepped clock, the cooldown has its true time left ($code0 s -> $code s)" \
            test "$code" -le "$code0" -a "$((code0 - code))" -lt 600
    else
        fail "restarted under the stepped clock, the cooldown is restored"
    fi
    keys q
    wait_for '^program exited with 0$' 10 >/dev/null || true
else
    fail "the demo runs under libfaketime"
fi

# --- 6: without a terminal, and bad input ---------------------------------------------

for offset in "+1d" "-30d"; do
    out=$(FAKETIME_DONT_FAKE_MONOTONIC=1 timeout 60 faketime -f "$offset" \
        "$TIMERKIT" demo --print-after 0.5 --sale-seconds 100 --state "$WORK/print.state" 2>&1 || true)
    line=$(grep -E '^Flash sale   starts in 00:01:(2[0-9]|3[0-9]|40)$' <<<"$out" || true)
    check "faketime -f $offset: --print-after shows the sale's true time left (${line#Flash sale   })" test -n "$line"
done

# Under libfaketime faking the monotonic and boot clocks too (no
# FAKETIME_DONT_FAKE_MONOTONIC), the loop's timers, armed through the
# kernel, would wait for as long as the clocks are faked ahead: the demo says
# so and ends, where it hung.
status=0
out=$(env -u FAKETIME_DONT_FAKE_MONOTONIC timeout 60 faketime -f "+1h" \
    "$TIMERKIT" demo --print-after 0.2 --state "$WORK/print.state" 2>&1) || status=$?
check "faketime faking the monotonic clock: the demo refuses to start, status 1 ($status: ${out:0:160})" \
    test "$status" -eq 1 -a -n "$(grep -F 'run it with FAKETIME_DONT_FAKE_MONOTONIC=1, which fakes only the wall clock' <<<"$out")"

# Before 1970 the wall clock's second is rounded down too (faked to start
# at 1960-01-01 00:00:00, going a thousand times slower than true time, so
# that it is still in that second when printed).
out=$(FAKETIME_DONT_FAKE_MONOTONIC=1 timeout 60 faketime -f "@1960-01-01 00:00:00 x0.001" \
    "$TIMERKIT" demo --print-after 0 --state "$WORK/print.state" 2>&1 || true)
check "faketime 1960: the wall clock shows 1960-01-01 00:00:00 ($(grep '^Wall clock' <<<"$out"))" \
    grep -qE '^Wall clock +1960-01-01 00:00:00' <<<"$out"

out=$("$TIMERKIT" demo --print-after 0.2 --sale-seconds 0 --state "$WORK/print.state" 2>&1 || true)
check "a sale already at zero reloads once" grep -qE '^Flash sale   started; the page reloaded 1 time$' <<<"$out"

status=0
out=$("$TIMERKIT" demo --sale-seconds -5 2>&1) || status=$?
check "a negative --sale-seconds is a usage error (status $status)" \
    test "$status" -eq 64 -a -n "$(grep -F -- '--sale-seconds needs a whole number of seconds' <<<"$out")"
# Out of the documented ranges: refused, never clamped to another value.
for option in "--sale-seconds 9999999999999" "--sale-seconds 31536001" \
    "--code-seconds 9223372036854775807" "--code-seconds 86401" "--print-after 86401"; do
    status=0
    # shellcheck disable=SC2086 # the option and its value
    out=$("$TIMERKIT" demo $option 2>&1) || status=$?
    check "$option is out of range: a usage error (status $status; $(head -n 1 <<<"$out"))" \
        test "$status" -eq 64 -a -n "$(grep -E -- "^timerkit demo: ${option% *} needs .*, [01] to [0-9]+" <<<"$out")"
done
out=$("$TIMERKIT" demo --print-after 0.2 --sale-seconds 31536000 --code-seconds 86400 --state "$WORK/print.state" 2>&1 || true)
check "the longest sale and cooldown are taken" grep -qE '^Flash sale   starts in 87(59:59:59|60:00:00)$' <<<"$out"
status=0
out=$("$TIMERKIT" demo --state "$WORK/print.state" </dev/null 2>&1) || status=$?
check "without a terminal, a clear message (status $status)" \
    test "$status" -eq 1 -a -n "$(grep -F 'standard input and output must be a terminal' <<<"$out")"
# A dumb terminal takes no escapes: no screen is drawn on it.
start env TERM=dumb "$TIMERKIT" demo --state "$WORK/print.state"
check "on a dumb terminal (TERM=dumb), a clear message" \
    wait_for '^timerkit demo: the terminal \(TERM=dumb\) cannot draw the screen' 10
check "... with status 1" \
    wait_for '^program exited with 1$' 10
# In a terminal, but with the screen sent to a file.
start sh -c 'exec "$0" demo --state "$1" >"$2"' "$TIMERKIT" "$WORK/print.state" "$WORK/screen.out"
check "with standard output not a terminal, a clear message" \
    wait_for '^timerkit demo: standard input and output must be a terminal' 10
if wait_for '^program exited with 1$' 10; then
    check "... with status 1, and nothing written to the file" test ! -s "$WORK/screen.out"
else
    fail "with standard output not a terminal, status 1"
fi

printf 'not a cooldown file' >"$WORK/corrupt.state"
status=0
out=$("$TIMERKIT" demo --print-after 0.2 --state "$WORK/corrupt.state" 2>"$WORK/corrupt.err") || status=$?
check "a corrupt state file is reported and the demo runs" grep -qE "^could not restore .*corrupt.state: " <<<"$out"
check "the corrupt state file is left as it was" test "$(cat "$WORK/corrupt.state")" = "not a cooldown file"
check "... said again on standard error, status 1 ($status: $(cat "$WORK/corrupt.err"))" test "$status" -eq 1 -a \
    "$(cat "$WORK/corrupt.err")" = "timerkit demo: could not restore $WORK/corrupt.state: not a TimerKit cooldown state file (the file was left as it was)"

# Not a regular file (a FIFO, through a link too; a device): said so, rather
# than as the library's EINVAL, and left as it is. A path through a regular
# file (ENOTDIR) names nothing, so nothing is "left as it was".
mkfifo "$WORK/fifo.state"
ln -s "$WORK/fifo.state" "$WORK/fifo-link.state"
for state in "$WORK/fifo.state:a FIFO" "$WORK/fifo-link.state:a FIFO" "/dev/null:a character device"; do
    status=0
    out=$("$TIMERKIT" demo --print-after 0.2 --state "${state%%:*}" 2>"$WORK/kind.err") || status=$?
    check "state ${state%%:*}: the screen says it is ${state#*:} ($(grep '^could not restore' <<<"$out"))" \
        grep -qxF "could not restore ${state%%:*}: not a regular file: it is ${state#*:} (left as it is: a code sent is not saved)" <<<"$out"
    check "... and standard error, status 1 ($status: $(cat "$WORK/kind.err"))" test "$status" -eq 1 -a \
        "$(cat "$WORK/kind.err")" = "timerkit demo: could not restore ${state%%:*}: not a regular file: it is ${state#*:} (the file was left as it was)"
done
# A code sent then is not saved; that too says what is at the path.
start_sized 200 30 "$TIMERKIT" demo --state "$WORK/fifo.state"
if wait_for "^could not restore $WORK/fifo.state: "; then
    keys s
    check "state fifo.state: s says the code is not saved, and what is at the path" \
        wait_for '^code sent, but not saved: not a regular file: it is a FIFO$' 10
    keys q
    check "... and so does standard error when q quits" \
        wait_for_joined "^timerkit demo: the code's cooldown was not saved to $WORK/fifo.state: not a regular file: it is a FIFO$" 10
else
    fail "the demo says it could not restore $WORK/fifo.state"
fi
check "the FIFO is still a FIFO" test -p "$WORK/fifo.state" -a -h "$WORK/fifo-link.state"
status=0
out=$("$TIMERKIT" demo --print-after 0.2 --state "$WORK/corrupt.state/x" 2>"$WORK/notdir.err") || status=$?
check "a path through a file: the screen says a code sent is not saved, not that a file is left" \
    grep -qE '^could not restore .*corrupt.state/x: stat failed: Not a directory \(ENOTDIR\) \(a code sent is not saved\)$' <<<"$out"
check "... standard error names no file left as it was ($status: $(cat "$WORK/notdir.err"))" test "$status" -eq 1 -a \
    "$(cat "$WORK/notdir.err")" = "timerkit demo: could not restore $WORK/corrupt.state/x: stat failed: Not a directory (ENOTDIR)"

# A state file that cannot be restored (corrupt; unreadable, unless root
# reads it all the same) is never saved over: a code sent runs unsaved,
# and at exit both are said, with status 1; the file is as it was.
unreadable_states=("$WORK/corrupt.state")
if [ "$(id -u)" -ne 0 ]; then
    printf 'a file the demo may not read' >"$WORK/unreadable.state"
    chmod 000 "$WORK/unreadable.state"
    unreadable_states+=("$WORK/unreadable.state")
else
    log "run as root, which reads a file of mode 000: only the corrupt state file was checked here"
fi
# file_state FILE: its mode, size and time of change, and what it holds.
file_state() { ls -l --time-style=+%s.%N "$1"; cat "$1" 2>/dev/null || true; }
for state in "${unreadable_states[@]}"; do
    before=$(file_state "$state")
    start_sized 200 30 "$TIMERKIT" demo --state "$state"
    if wait_for "^could not restore $state: "; then
        check "state $(basename "$state"): the screen says it is left as it is ($LINE)" \
            wait_for '^could not restore .*: .* \(left as it is: a code sent is not saved\)$' 2
        keys s
        check "state $(basename "$state"): s sends the code, not saved" wait_for '^Code         sent; resend in [0-9]+ s \(not saved\)$' 10
        keys q
        check "... q quits, saying the state file could not be restored and was left as it was" \
            wait_for "^timerkit demo: could not restore $state: .* \(the file was left as it was\)$" 10
        check "... and that the code's cooldown was not saved" wait_for "^timerkit demo: the code's cooldown was not saved to $state: " 2
        check "... with status 1" wait_for '^program exited with 1$' 10
        check "... the file as it was (mode, time, contents)" test "$(file_state "$state")" = "$before"
    else
        fail "the demo says it could not restore $state"
    fi
done

# Outside text with control characters (a newline, a tab, ESC and a C1
# CSI starting escape sequences, a backslash) in the state file's path:
# shown escaped, on the screen and on standard error, never acted on.
CONTROL_DIR=$'ctl\n\t\e[2J\e[31m\xc2\x9b7m\\x'
CONTROL_SHOWN='ctl\n\t\e[2J\e[31m\u{9B}7m\\x'
mkdir -p "$WORK/$CONTROL_DIR"
printf 'not a cooldown file' >"$WORK/$CONTROL_DIR/demo.state"
start "$TIMERKIT" demo --state "$WORK/$CONTROL_DIR/demo.state"
check "a path with control characters is shown escaped ($CONTROL_SHOWN)" \
    wait_for_text "could not restore $WORK/$CONTROL_SHOWN/demo.state: " 10
check "... on one row, the screen's rows in place" \
    test "$(screen | grep -c '^could not restore ')" -eq 1 -a "$(screen | sed -n 12p | cut -c1-17)" = "could not restore" \
    -a "$(screen | head -n 1 | cut -c1-13)" = "TimerKit demo"
keys q
wait_for '^program exited with ' 10 >/dev/null || true
# Not saved (its folder missing): the line at exit, on standard error.
start sh -c 'exec "$0" demo --state "$1" 2>"$2"' "$TIMERKIT" "$WORK/$CONTROL_DIR/missing/demo.state" "$WORK/control.err"
if wait_for '^Code         press s to send a code$'; then
    keys s
    check "... s with the state's folder missing: the save fails" wait_for '^code sent, but not saved: ' 10
    keys q
    wait_for '^program exited with ' 10 >/dev/null || true
    check "... and so on standard error at exit ($(head -c 200 "$WORK/control.err"))" \
        grep -qxF "timerkit demo: the code's cooldown was not saved to $WORK/$CONTROL_SHOWN/missing/demo.state: open failed: No such file or directory (ENOENT)" "$WORK/control.err"
    check "... one line, with no ESC in it" test "$(wc -l <"$WORK/control.err")" -eq 1 -a -z "$(grep -F $'\e' "$WORK/control.err")"
else
    fail "the demo starts with a state path with control characters"
fi

# A state file that cannot be written (its folder missing), or that is a
# folder: the failed save shows on the screen while the cooldown runs, and
# is said again at exit (on standard error, here the window), with status 1.
for state in "$WORK/no-such-dir/demo.state" "$WORK"; do
    start "$TIMERKIT" demo --state "$state"
    if wait_for '^Code         press s to send a code$'; then
        keys s
        check "state $state: the code is sent, the failure shown" wait_for '^code sent, but not saved: '
        check "... and the cooldown says it is not saved" wait_for '^Code         sent; resend in [0-9]+ s \(not saved\)$' 2
        keys q
        check "... q quits, saying the cooldown was not saved" \
            wait_for "^timerkit demo: the code's cooldown was not saved to $state: " 10
        check "... with status 1" wait_for '^program exited with 1$' 10
    else
        fail "the demo starts with the state file $state"
    fi
done

# --- 8: every way out puts the terminal back --------------------------------------------

SIGNAL_STATE="$WORK/signal.state"
COOKED="echo icanon isig"
RAW="-echo -icanon -isig"
for signal in TERM HUP INT; do
    start "$TIMERKIT" demo --state "$SIGNAL_STATE"
    if wait_for '^Ticker       frame [1-9][0-9]* of' && [ "$(tty_modes)" = "$RAW" ]; then
        number=$(kill -l "$signal")
        kill -s "$signal" "$(program_pid "$TIMERKIT demo --state $SIGNAL_STATE")"
        check "SIG$signal ends the demo with status $((128 + number))" wait_for "^program exited with $((128 + number))\$" 10
        check "after SIG$signal the terminal is in cooked mode ($(tty_modes))" test "$(tty_modes)" = "$COOKED"
        check "after SIG$signal the cursor shows and lines wrap ($(pane_flags))" test "$(pane_flags)" = "cursor=1 wrap=1"
    else
        fail "the demo runs in raw mode before SIG$signal ($(tty_modes))"
    fi
done

# wait_until_raw: polls until the window's terminal is in raw mode (10 s).
wait_until_raw() {
    local waited=0
    while [ "$waited" -lt 100 ]; do
        [ "$(tty_modes)" = "$RAW" ] && return 0
        sleep 0.1
        waited=$((waited + 1))
    done
    return 1
}

# frame_number: the frame the screen shows now.
frame_number() { field '^Ticker       frame ([0-9]+) of a 30 Hz ticker.*'; }

# demo_in_shell: starts the demo at the interactive shell's prompt (the
# screen cleared first) and waits for its frames; its pid in DEMO_PID.
# Fails, saying so, if it does not show.
DEMO_PID=""
demo_in_shell() {
    keys C-l "$(printf '%q ' "$TIMERKIT" demo --state "$SIGNAL_STATE")" Enter
    if wait_for '^Ticker       frame [1-9][0-9]* of'; then
        DEMO_PID=$(program_pid "$TIMERKIT demo --state $SIGNAL_STATE")
        return 0
    fi
    fail "the demo runs in the interactive shell"
    return 1
}

# stopped_demo_in_shell: demo_in_shell, then Ctrl-Z, waiting for the
# shell to say the job is stopped.
stopped_demo_in_shell() {
    demo_in_shell || return 1
    keys C-z
    wait_for 'Stopped +.*timerkit demo' 10 >/dev/null || true
}

# check_back_after_fg WHAT: types fg, then checks that the demo draws again
# (its frame number grows in 1 s) and that the terminal is in raw mode, the
# cursor hidden and lines cut; WHAT begins the checks' names.
check_back_after_fg() {
    local frame="" later
    keys fg Enter
    wait_for '^Frames       ' 10 >/dev/null && frame=$(frame_number)
    sleep 1
    later=$(frame_number)
    check "$1 the demo draws again (frame $frame -> $later in 1 s)" \
        test -n "$frame" -a -n "$later" -a "${later:-0}" -gt "${frame:-0}"
    check "$1 the terminal is in raw mode again ($(tty_modes); $(pane_flags))" \
        test "$(tty_modes)" = "$RAW" -a "$(pane_flags)" = "cursor=0 wrap=0"
}

# kill_job PID: types `kill %1` at the shell's prompt (the screen cleared
# first), waits up to 5 s for the process PID to end, then runs a command,
# for which the shell waits and so reaps it and says how it ended. (Bash
# 5.2 may miss a stopped job's end that comes right after its kill, and
# report it only once it next waits for a child: so with a plain sleep.)
kill_job() {
    local pid=$1
    keys C-l 'kill %1' Enter
    wait_gone "$pid" || true
    keys 'sleep 0.1' Enter
}

# check_gone_to_the_shell PID: checks that the demo's process PID ends
# (within 5 s; killed if not), and that the terminal is the shell's: the
# cursor shown, lines wrapping, and a command run then (sleep) in cooked
# mode, as the shell left it before the demo.
check_gone_to_the_shell() {
    local pid=$1 gone=0 modes
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || { gone=1; break; }
        sleep 0.1
    done
    check "... its process is gone" test -n "$pid" -a "$gone" -eq 1
    [ "$gone" -eq 1 ] || kill -s KILL "$pid" 2>/dev/null || true
    # A command that runs long enough to be seen running, whatever the
    # machine's load; the modes are read once it has them, then it ends.
    keys 'sleep 30' Enter
    for _ in $(seq 1 100); do
        modes=$(tty_modes)
        [ "$modes" = "$COOKED" ] && break
        sleep 0.1
    done
    check "... and the terminal is the shell's (a command runs in: $modes; $(pane_flags))" \
        test "$modes" = "$COOKED" -a "$(pane_flags)" = "cursor=1 wrap=1"
    keys C-c
    wait_for '^(PROMPT|INNER)> ?$' 10 >/dev/null || true
}

start_shell 120 30
wait_for '^PROMPT>' 10 >/dev/null || true
keys "$(printf '%q ' "$TIMERKIT" demo --state "$SIGNAL_STATE")" Enter
if wait_for '^Ticker       frame [1-9][0-9]* of'; then
    # Ctrl-Z is a key in raw mode: the demo stops itself with SIGTSTP.
    keys C-z
    check "Ctrl-Z stops the demo, and the shell says so" wait_for 'Stopped +.*timerkit demo' 10
    # (The shell's line editor then sets the modes it wants: what shows the
    # demo's restore is the cursor, the line wrap and the signal keys.)
    check "stopped, the cursor shows, lines wrap and the signal keys work ($(pane_flags); $(tty_modes))" \
        test "$(pane_flags)" = "cursor=1 wrap=1" -a -n "$(tty_modes | grep -xE '.*(^| )isig( |$).*')"
    check_back_after_fg "after fg"
    keys q
    check "q quits to the shell after the stop" wait_for '^PROMPT> ?$' 10
    # Stopped, then ended by the shell's kill, which sends SIGTERM and then
    # SIGCONT: it ends, rather than stopping again (SIGTTOU) with SIGTERM
    # held, and the terminal is the shell's.
    if stopped_demo_in_shell; then
        kill_job "$DEMO_PID"
        check "Ctrl-Z, then kill %1 ends the demo, and the shell says so" wait_for 'Terminated +.*timerkit demo' 10
        check_gone_to_the_shell "$DEMO_PID"
    fi
    # Stopped, then going on in the background: the job runs, but leaves
    # the terminal to the shell (draws nothing, takes no keys), until fg.
    if stopped_demo_in_shell; then
        keys bg Enter
        sleep 1
        keys C-l jobs Enter
        check "after bg the demo runs in the background" wait_for '^\[1\]\+ +Running +.*timerkit demo' 10
        keys C-l 'echo hello' Enter
        check "... the shell takes commands (echo hello)" wait_for '^hello$' 10
        sleep 1
        check "... and nothing of the demo is drawn over the shell" \
            test -z "$(screen | grep -E '^(TimerKit demo|Flash sale|Frames) ')" -a -n "$(screen | grep -x hello)"
        check "... whose terminal keeps its modes ($(tty_modes); $(pane_flags))" \
            test -n "$(tty_modes | grep -xE '.*(^| )isig( |$).*')" -a "$(pane_flags)" = "cursor=1 wrap=1"
        check_back_after_fg "after bg and fg"
        keys q
        check "... and takes keys: q quits to the shell" wait_for '^PROMPT> ?$' 10
        check_gone_to_the_shell "$DEMO_PID"
    fi
    # In the background after bg, kill %1 ends it too.
    if stopped_demo_in_shell; then
        keys bg Enter
        sleep 1
        kill_job "$DEMO_PID"
        check "bg, then kill %1 ends the demo, and the shell says so" wait_for 'Terminated +.*timerkit demo' 10
        check_gone_to_the_shell "$DEMO_PID"
    fi
    # Started by a script (sh -c '...; echo ...'): Ctrl-Z stops the whole
    # job, as the terminal's own Ctrl-Z would, the script with the demo, so
    # that the shell says so and takes commands again.
    demo_command="$(printf '%q ' "$TIMERKIT" demo --state "$SIGNAL_STATE")"
    keys C-l "sh -c $(printf '%q' "$demo_command; echo the script went on")" Enter
    if wait_for '^Ticker       frame [1-9][0-9]* of'; then
        DEMO_PID=$(program_pid "$TIMERKIT demo --state $SIGNAL_STATE")
        keys C-z
        check "started by a script, Ctrl-Z stops the script too, and the shell says so" \
            wait_for '^\[1\]\+ +Stopped +sh -c' 10
        keys 'echo hello from the shell' Enter
        check "... and takes commands" wait_for '^hello from the shell$' 10
        kill_job "$DEMO_PID"
        check_gone_to_the_shell "$DEMO_PID"
    else
        fail "the demo runs from a script in the interactive shell"
    fi
    # In the background, stopped or running, in a shell of its own that
    # ignores SIGHUP, disowned, and that shell gone: no shell can bring it
    # back to the terminal, so it quits and says why rather than run on
    # unseen (or, stopped and then sent SIGCONT by the kernel, draw over
    # the shell it is left with).
    for how in stopped running; do
        keys C-l "env PS1='INNER> ' bash --norc --noprofile -i" Enter
        wait_for '^INNER> ?$' 10 >/dev/null || true
        keys 'trap "" HUP' Enter
        if stopped_demo_in_shell; then
            [ "$how" = stopped ] || keys bg Enter
            keys C-l disown Enter exit Enter
            check "$how in the background, its shell gone, the demo says it quits" \
                wait_for 'timerkit demo: quit in the background, where no shell can bring it back to' 10
            check_gone_to_the_shell "$DEMO_PID"
            check "... and draws nothing over the shell" test -z "$(screen | grep -E '^(TimerKit demo|Frames) ')"
        fi
    done
else
    fail "the demo runs in an interactive shell"
fi

# Stopped by a signal it cannot catch, with the terminal reset meanwhile
# (as a shell resets it), then going on in the foreground.
start "$TIMERKIT" demo --state "$SIGNAL_STATE"
if wait_for '^Ticker       frame [1-9][0-9]* of' && [ "$(tty_modes)" = "$RAW" ]; then
    pid=$(program_pid "$TIMERKIT demo --state $SIGNAL_STATE")
    kill -s STOP "$pid"
    stty -F "$(tmux -L "$SOCKET" display -p -t term '#{pane_tty}')" sane
    kill -s CONT "$pid"
    check "going on after a stop, the demo puts the terminal in raw mode again" wait_until_raw
    keys q
    check "q quits after that, without Enter" wait_for '^program exited with 0$' 10
else
    fail "the demo runs in raw mode before SIGSTOP ($(tty_modes))"
fi

# Its window closed under a demo started ignoring SIGHUP (as nohup starts
# it): the screen can no longer be drawn, so it quits and says why, rather
# than running on unseen.
start sh -c 'trap "" HUP; exec "$0" demo --state "$1" 2>"$2"' "$TIMERKIT" "$SIGNAL_STATE" "$WORK/hangup.err"
if wait_for '^Ticker       frame [1-9][0-9]* of'; then
    pid=$(program_pid "$TIMERKIT demo --state $SIGNAL_STATE")
    tmux -L "$SOCKET" kill-server
    gone=0
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || { gone=1; break; }
        sleep 0.1
    done
    check "its window closed (SIGHUP ignored), the demo quits" test "$gone" -eq 1
    check "... saying that it cannot write the screen ($(cat "$WORK/hangup.err"))" \
        grep -qx 'timerkit: cannot write the output: Input/output error' "$WORK/hangup.err"
    [ "$gone" -eq 1 ] || kill -s KILL "$pid" 2>/dev/null || true
else
    fail "the demo runs started ignoring SIGHUP"
fi

start_sized 80 12 "$TIMERKIT" demo --state "$SIGNAL_STATE"
if wait_for '^Frames       ' && sleep 1; then
    check "in an 80x12 window the title stays on the first row" \
        test "$(screen | head -n 1 | cut -c1-13)" = "TimerKit demo"
    # (A line that wrapped would push the rows after it down.)
    check "... and lines are cut at the edge, never wrapped (the frame line once, ninth)" \
        test "$(screen | grep -c '^Frames       ')" -eq 1 -a "$(screen | sed -n 9p | cut -c1-6)" = "Frames"
    # 80 columns, a terminal's usual width, hold every row whole.
    check "... and every row fits its 80 columns ($(screen | awk 'length($0) >= 80' | head -n 1))" \
        test "$(screen | awk 'length($0) >= 80' | wc -l)" -eq 0
    tmux -L "$SOCKET" resize-window -t term -x 20 -y 5
    sleep 1
    check "in a 20x5 window the first rows show, not the last ($(screen | sed -n 5p))" \
        test "$(screen | sed -n 5p | cut -c1-5)" = "Badge"
    # Each line is its first 20 columns: none of its end written over the
    # last column, nor the last column left blank.
    check "... each cut cleanly to the 20 columns ($(screen | head -n 1))" \
        test "$(screen | head -n 1)" = "TimerKit demo   q qu" -a "$(screen | sed -n 5p)" = "Badge        refresh"
    tmux -L "$SOCKET" resize-window -t term -x 80 -y 12
    keys q
    check "q quits the small window" wait_for '^program exited with 0$' 10
else
    fail "the demo runs in an 80x12 window"
fi

# Outside text on the screen (the state file's path in "could not restore
# PATH: ..."), cut by the columns a terminal gives it: a CJK character
# takes two, a combining accent none. In a window whose edge falls inside
# the path, the message row is the message's first columns, whole (a wide
# character that would cross the edge left out, the row a column short),
# never its end written over the last column, and no row runs over.
# cut_row_check NAME DIRECTORY COUNT SHOWN: the path is
# $WORK/DIRECTORY/demo.state; the window ends COUNT columns into
# DIRECTORY, where the row must end with SHOWN. (tmux never shows more
# than the window holds: a line that ran over would show as a row that
# ends otherwise, its last column overwritten, or as rows out of place.)
cut_row_check() {
    local name=$1 directory=$2 count=$3 prefix width row
    mkdir -p "$WORK/$directory"
    printf 'not a cooldown file' >"$WORK/$directory/demo.state"
    prefix="could not restore $WORK/"
    width=$((${#prefix} + count))
    start_sized "$width" 14 "$TIMERKIT" demo --state "$WORK/$directory/demo.state"
    if wait_for '^could not restore ' 10; then
        row=$(screen | grep -m 1 '^could not restore ' || true)
        check "$name: in a $width-column window the message row is its first columns, whole ($row)" \
            test "$row" = "$prefix$4"
        check "... and the screen keeps its rows (the title first, the frame line ninth)" \
            test "$(screen | head -n 1 | cut -c1-13)" = "TimerKit demo" -a "$(screen | sed -n 9p | cut -c1-6)" = "Frames"
        keys q
        wait_for '^program exited with ' 10 >/dev/null || true
    else
        fail "$name: the demo says it could not restore the state file"
    fi
}
# Fifteen columns into eight CJK characters: seven of them (fourteen
# columns), the eighth left out rather than split, and nothing after it.
cut_row_check "a CJK path" "计时器的状态目录" 15 "计时器的状态目"
# Ten columns into "é" written as e and a combining accent: nine of them,
# each one column (two scalars), the tenth not put in the last column.
accents=""
for _ in $(seq 1 20); do accents+=$'e\xcc\x81'; done
cut_row_check "a path with combining accents" "$accents" 10 "${accents:0:$((9 * ${#accents} / 20))}"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
