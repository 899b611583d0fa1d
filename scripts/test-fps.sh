#!/usr/bin/env bash
# `timerkit fps` used as a person uses it, in a terminal (tmux), and as a
# script uses it (--json).
#
#   scripts/test-fps.sh
#
# What it checks (no assertion about how fast the machine is):
#   1. in a terminal, the line updates in place: one line, whose frame count
#      grows, showing fps, p99 frame time, dropped frames and hitch time
#      with a grade; at the end it says "done" and the program exits 0;
#      in a window narrower than the line (40 and 20 columns), the line keeps
#      to one row, cut cleanly to the width, and the summary wraps whole; Ctrl-C ends it with the
#      summary so far, line wrap back on, the shell's prompt on a line of
#      its own and status 130 (the end by SIGINT), unless it was started
#      ignoring SIGINT; SIGINT to a run into a file, or with --json, or
#      during a frame's work, or to it as a PID namespace's init (status
#      130 there too), prints the summary so far too; a second SIGINT ends
#      it while it is stuck writing into a full pipe; run in the background to its end, it turns
#      line wrap back on; on a dumb terminal (TERM=dumb) it writes a line a
#      second, as to a file;
#   2. --json prints one summary object with every field, at the rate given;
#   3. work longer than a frame (30 ms at 60 Hz) makes every frame after the
#      first drop at least one grid point, which the summary counts;
#   4. spikes on 100 % of the frames are all counted; a seed up to 2^64 - 1
#      is echoed as given; a frame's work longer than the run stops where
#      the run ends, and the summary then has every field, null;
#   5. bad options are refused with status 64 and a message, never a crash;
#      under libfaketime faking the monotonic clock it refuses to start,
#      saying why, where it hung.
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

TEST_NAME=test-fps
TEST_PACKAGES="tmux python3 faketime"
# shellcheck source=scripts/lib/terminal-test.sh
. scripts/lib/terminal-test.sh

# --- 1: in a terminal --------------------------------------------------------------

LIVE='^fps ([0-9]+\.[0-9])  p99 [0-9]+\.[0-9] ms  dropped [0-9]+  hitch [0-9]+\.[0-9] ms/s \((good|warning|critical)\)$'
start "$TIMERKIT" fps --rate 60 --seconds 4 --work-ms 2
check "the line says it is measuring the first second" wait_for '^fps \.\.\.  measuring the first second at 60\.0 Hz$' 10
if wait_for "$LIVE" 10; then
    pass "the line shows fps, p99, drops and hitch time ($LINE)"
    lines=$(screen | grep -c -E '^(fps|done)' || true)
    check "it is one line, updated in place ($lines line)" test "$lines" -eq 1
else
    fail "the line shows fps, p99, drops and hitch time"
fi
SUMMARY_LINE='^done: fps [0-9]+\.[0-9]  p99 [0-9]+\.[0-9] ms  dropped [0-9]+  hitch [0-9]+\.[0-9] ms/s \((good|warning|critical)\) over [0-9]+ frames$'
if wait_for "$SUMMARY_LINE" 30; then
    frames=$(field '^done: .* over ([0-9]+) frames$')
    check "it ends with a summary of the run ($frames frames)" test "$frames" -gt 0
else
    fail "it ends with a summary of the run"
fi
check "it exits 0" wait_for '^program exited with 0$' 10
check "it leaves lines wrapping ($(pane_flags))" test "$(pane_flags)" = "cursor=1 wrap=1"

# A dumb terminal (TERM=dumb) takes no escapes: a line a second, each on
# a row of its own, as to a file, and lines wrapping all along.
start env TERM=dumb "$TIMERKIT" fps --rate 60 --seconds 3.5
if wait_for '^done: fps ' 30; then
    check "with TERM=dumb, the first second's line stays on a row of its own" \
        wait_for '^fps \.\.\.  measuring the first second at 60\.0 Hz$' 1
    rows=$(screen | grep -c -E "${LIVE%\$}" || true)
    check "... and each reading on its own row ($rows rows)" test "$rows" -ge 2
    check "... with lines wrapping all along ($(pane_flags))" test "$(pane_flags)" = "cursor=1 wrap=1"
else
    fail "with TERM=dumb, the run ends with its summary"
fi

# A window narrower than the line: still one row, cut at the edge.
start_sized 40 10 "$TIMERKIT" fps --rate 60 --seconds 3
if wait_for '^fps [0-9]' 10; then
    rows=$(screen | grep -c -v '^$' || true)
    check "in a 40-column window the line takes one row ($rows; $(screen | grep -v '^$' | head -n 1))" test "$rows" -eq 1
    # Cut cleanly: the first 40 columns of the line, not its end written
    # over the last column. (The whole line is longer than 40 columns, so
    # its closing parenthesis never shows.)
    row=$(screen | grep -m 1 '^fps ' || true)
    check "in a 40-column window the line is its first 40 columns ($row)" test "${#row}" -le 40 -a \
        -n "$(grep -E '^fps [0-9]+\.[0-9]  p99 [0-9]+\.[0-9] ms  dropped [0-9]+ +[a-z]*$' <<<"$row")"
else
    fail "the line shows in a 40-column window"
fi
# Whole: the rows it wraps into (where they break depends on the figures'
# widths) joined give the summary.
check "the summary wraps whole in the narrow window" wait_for_joined "$SUMMARY_LINE" 10

start_sized 20 10 "$TIMERKIT" fps --rate 60 --seconds 3
if wait_for '^fps [0-9]' 10; then
    row=$(screen | grep -m 1 '^fps ' || true)
    check "in a 20-column window the line is its first 20 columns ($row)" test "${#row}" -le 20 -a \
        -n "$(grep -E '^fps [0-9]+\.[0-9]  p99 [0-9.]+( m?)?$' <<<"$row")"
else
    fail "the line shows in a 20-column window"
fi

# Started ignoring SIGINT (as a shell starts a background job): Ctrl-C
# leaves it running.
start sh -c 'trap "" INT; exec "$0" fps --rate 60 --seconds 3' "$TIMERKIT"
if wait_for '^fps [0-9]' 10; then
    keys C-c
    check "started ignoring SIGINT, Ctrl-C does not end it" wait_for '^done: fps ' 10
    check "... and it exits 0" wait_for '^program exited with 0$' 10
else
    fail "the line shows when started ignoring SIGINT"
fi

# Ctrl-C in a shell: line wrap back on, and the shell's prompt on a line of its own.
start_shell 40 10
wait_for '^PROMPT>' 10 >/dev/null || true
keys "$(printf '%q ' "$TIMERKIT" fps --rate 60 --seconds 60)" Enter
if wait_for '^fps [0-9]' 10; then
    keys C-c
    check "Ctrl-C prints the summary so far" \
        wait_for_joined "${SUMMARY_LINE/done/interrupted}" 10
    check "Ctrl-C ends it at a prompt of its own" wait_for '^PROMPT> ?$' 10
    check "after Ctrl-C lines wrap again ($(pane_flags))" test "$(pane_flags)" = "cursor=1 wrap=1"
    # It ends by SIGINT, as Ctrl-C ends a program: the shell's status 130.
    keys 'echo "status $?"' Enter
    check "... and it ends by SIGINT (the shell's \$? is 130)" wait_for '^status 130$' 10
    # Run in the background to its end: it turned line wrap off at the
    # start, and turns it back on at the end, though the shell has the
    # terminal then. (`wait` returns when it ends; the shell then says it
    # is done.)
    keys C-l "$(printf '%q ' "$TIMERKIT" fps --rate 60 --seconds 1) & wait" Enter
    check "in the background it runs to its end" wait_for '^\[1\]\+ +Done ' 10
    check "... and lines wrap again after it ($(pane_flags))" test "$(pane_flags)" = "cursor=1 wrap=1"
    # Under stty tostop, stopped with Ctrl-Z, then kill %1 (SIGTERM, then
    # SIGCONT): it ends. Going on in the background, it writes its escapes
    # again, which must not stop it once more with SIGTERM held.
    keys C-l "stty tostop; $(printf '%q ' "$TIMERKIT" fps --rate 60 --seconds 60)" Enter
    if wait_for '^fps [0-9]' 10; then
        pid=$(program_pid "$TIMERKIT fps --rate 60 --seconds 60")
        keys C-z
        check "under stty tostop, Ctrl-Z stops it" wait_for '^\[1\]\+ +Stopped' 10
        keys C-l 'kill %1' Enter
        gone=0
        wait_gone "$pid" && gone=1
        check "... and kill %1 ends it (state ${STATE:-gone})" test -n "$pid" -a "$gone" -eq 1
        [ "$gone" -eq 1 ] || kill -s KILL "$pid" 2>/dev/null || true
        keys 'stty -tostop' Enter
    else
        fail "the line shows in a shell under stty tostop"
    fi
else
    fail "the line shows in a shell"
fi

# SIGINT to a run whose output is a file, or --json: the summary so far,
# then the end by SIGINT. (Started with SIGINT's default action, as a
# foreground program is; the signal is sent once the handler is in place,
# which /proc's SigCgt mask shows: bit 1 is SIGINT.)
catches_sigint() {
    local mask
    mask=$(awk '/^SigCgt:/ { print $2 }' "/proc/$1/status" 2>/dev/null || true)
    [ -n "$mask" ] && (((16#$mask >> 1) & 1))
}
interrupt_run() { # OUTPUT ARGUMENT...: runs timerkit fps, sends SIGINT, sets STATUS
    local output=$1 pid job
    shift
    ${AS_INIT:+unshare --pid --fork --mount-proc} env --default-signal=INT "$TIMERKIT" fps "$@" >"$output" 2>&1 &
    job=$!
    pid=$job
    # As a PID namespace's init: the program is unshare's child.
    if [ -n "${AS_INIT:-}" ]; then
        for _ in $(seq 1 50); do
            [ -n "$(pgrep -P "$job")" ] && break
            sleep 0.1
        done
        pid=$(pgrep -P "$job" | head -n 1)
    fi
    for _ in $(seq 1 100); do
        catches_sigint "$pid" && break
        sleep 0.1
    done
    sleep 0.5
    local sent
    sent=$(date +%s%N)
    kill -s INT "$pid" 2>/dev/null || true
    STATUS=0
    wait "$job" || STATUS=$?
    WAITED_MS=$((($(date +%s%N) - sent) / 1000000))
}
interrupt_run "$WORK/interrupted.out" --rate 60 --seconds 60
check "SIGINT to a run into a file: the summary so far, then the end by SIGINT (status $STATUS)" \
    eval '[ "$STATUS" -eq 130 ] && grep -qE "^interrupted: fps .* over [0-9]+ frames$" "$WORK/interrupted.out"'
interrupt_run "$WORK/interrupted.json" --rate 10 --seconds 60 --work-ms 10000 --json
check "SIGINT during a frame's work, --json: an object saying so, then the end by SIGINT (status $STATUS)" \
    python3 -c '
import json, sys
s = json.loads(open(sys.argv[1]).read())
sys.exit(0 if s["interrupted"] is True and s["frames"] >= 1 and sys.argv[2] == "130" else 1)' "$WORK/interrupted.json" "$STATUS"
# 10 s of work against an end at once: far apart, whatever the machine.
check "... and it ends then, not after the frame's 10 s of work (${WAITED_MS} ms)" test "$WAITED_MS" -lt 5000
# A second SIGINT ends it at once, also while it is stuck writing its
# summary into a pipe that is full, which nobody reads (the FIFO is open
# for reading here, and filled first).
mkfifo "$WORK/full.fifo"
exec 3<>"$WORK/full.fifo"
head -c 65536 /dev/zero >&3
env --default-signal=INT "$TIMERKIT" fps --rate 60 --seconds 0.5 --json >&3 2>/dev/null &
stuck=$!
sleep 2
kill -s INT "$stuck" 2>/dev/null || true
sleep 0.5
state=$(awk '{ print $3 }' "/proc/$stuck/stat" 2>/dev/null || true)
check "SIGINT while it is stuck writing its summary: it waits on (state ${state:-gone})" test -n "$state" -a "$state" != Z
kill -s INT "$stuck" 2>/dev/null || true
gone=0
wait_gone "$stuck" && gone=1
check "... and a second SIGINT ends it at once (state ${STATE:-gone})" test "$gone" -eq 1
[ "$gone" -eq 1 ] || kill -s KILL "$stuck" 2>/dev/null || true
STATUS=0
wait "$stuck" 2>/dev/null || STATUS=$?
check "... by SIGINT (status $STATUS)" test "$STATUS" -eq 130
exec 3>&-

# As a PID namespace's init (a container run without an init), where
# SIGINT's default action ends nothing: it still ends, with status 130.
AS_INIT=1 interrupt_run "$WORK/as-init.json" --rate 60 --seconds 60 --json
check "SIGINT to it as a PID namespace's init: the summary, then status 130 (status $STATUS)" \
    eval '[ "$STATUS" -eq 130 ] && grep -q "\"interrupted\": true" "$WORK/as-init.json"'

# --- 2-4: --json ---------------------------------------------------------------------

# json_check NAME ARGUMENTS -- PYTHON: runs `timerkit fps ARGUMENTS --json`
# and evaluates the Python expression with the object as `s`.
json_check() {
    local name=$1 output
    shift
    local arguments=()
    while [ "$1" != "--" ]; do arguments+=("$1"); shift; done
    shift
    if ! output=$("$TIMERKIT" fps "${arguments[@]}" --json); then
        fail "$name (exit status)"
        return
    fi
    if python3 -c '
import json, sys
s = json.loads(sys.argv[1])
ok = eval(sys.argv[2])
print("      ", {k: s[k] for k in ("frames", "fps", "dropped", "ticker_dropped", "frame_time_p99_ms", "grade") if k in s})
sys.exit(0 if ok else 1)' "$output" "$1"; then
        pass "$name"
    else
        echo "      output: $output"
        fail "$name"
    fi
}

FIELDS='set(s) >= {"rate", "seconds", "work_ms", "jank_percent", "spike_ms", "seed", "frames", "spikes", "ticker_dropped", "interrupted", "fps", "frame_time_p50_ms", "frame_time_p95_ms", "frame_time_p99_ms", "frame_time_max_ms", "dropped", "hitch_ms_per_s", "grade"}'
json_check "--json prints one summary object with every field" --rate 60 --seconds 2 -- \
    "$FIELDS and s['interrupted'] is False and s['rate'] == 60 and s['frames'] > 0 and s['fps'] > 0 and s['grade'] in ('good', 'warning', 'critical') and s['frame_time_p50_ms'] <= s['frame_time_p99_ms'] <= s['frame_time_max_ms']"
json_check "30 ms of work at 60 Hz drops a grid point at every frame, and the summary counts them" \
    --rate 60 --seconds 2 --work-ms 30 -- \
    "s['frames'] >= 2 and s['dropped'] >= s['frames'] - 1 and s['ticker_dropped'] >= s['frames'] - 1 and s['frame_time_p50_ms'] >= 33.3 and s['hitch_ms_per_s'] > 10 and s['grade'] == 'critical'"
json_check "spikes on every frame are all counted" --rate 50 --seconds 1 --jank 100 --spike-ms 25 -- \
    "s['spikes'] == s['frames'] and s['dropped'] >= s['frames'] - 1"
json_check "a seed above Int64.max is echoed as the unsigned number it is" \
    --rate 50 --seconds 0.2 --seed 18446744073709551615 -- "s['seed'] == 18446744073709551615"
# A frame's work longer than the run: the work stops where the run ends,
# and a summary with no frame time measured still has every field (null).
started=$(date +%s%N)
json_check "work longer than the run: one frame, every field there, the frame times null" \
    --rate 1000 --seconds 0.2 --work-ms 10000 -- \
    "$FIELDS and s['frames'] == 1 and all(s[k] is None for k in ('fps', 'frame_time_p99_ms', 'dropped', 'grade'))"
elapsed_ms=$((($(date +%s%N) - started) / 1000000))
# 10 s of work against a 0.2 s run: far inside either, whatever the machine.
check "... and the run ends with it, not after the 10 s of work (${elapsed_ms} ms)" test "$elapsed_ms" -lt 5000

# --- 5: bad options ------------------------------------------------------------------

status=0
out=$(env -u FAKETIME_DONT_FAKE_MONOTONIC timeout 60 faketime -f "+1h" "$TIMERKIT" fps --seconds 1 --json 2>&1) || status=$?
check "faketime faking the monotonic clock: it refuses to start, status 1 ($status: ${out:0:160})" \
    test "$status" -eq 1 -a -n "$(grep -F 'run it with FAKETIME_DONT_FAKE_MONOTONIC=1, which fakes only the wall clock' <<<"$out")"

refused() {
    local name=$1 output status=0
    shift
    output=$("$TIMERKIT" fps "$@" 2>&1) || status=$?
    if [ "$status" -eq 64 ] && grep -q '^timerkit fps: ' <<<"$output" && grep -q '^usage: timerkit fps' <<<"$output"; then
        pass "$name is refused (64): $(head -n 1 <<<"$output")"
    else
        fail "$name is refused with 64 and a message (status $status: $output)"
    fi
}
refused "--rate 0" --rate 0
refused "--rate 5000" --rate 5000
refused "--rate nan" --rate nan
refused "--seconds -1" --seconds -1
refused "--work-ms with no value" --work-ms
refused "--jank 101" --jank 101
refused "--seed -3" --seed -3
refused "an unknown option" --frames 3

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
