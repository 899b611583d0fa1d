#!/usr/bin/env bash
# Builds the C core's soak run with -O2 and runs it (by default 10 minutes):
# a real loop holding about 100,000 pending timers while 4 threads schedule,
# cancel and reschedule into it, every timer accounted for, the resident set
# and the open descriptors sampled every 5 s and judged flat after the
# warm-up. Run by hand: scripts/test.sh's bench stage runs it for 6 seconds
# only, to keep it working. See Benchmarks/README.md.
#
#   scripts/soak.sh                         10 minutes
#   scripts/soak.sh --seconds 60            any option of the program
#   scripts/soak.sh --sample-seconds 10     a sample every 10 s
#   scripts/soak.sh --csv build/soak.csv    the curve as CSV too
#   scripts/soak.sh --help                  the options
#
# The binary goes to build/release/soak; the exit status is the program's
# (0 clean and flat, 1 an accounting error, 3 not flat).

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

log=scripts/soak.sh
# shellcheck source=scripts/lib/release-c.sh
. scripts/lib/release-c.sh
SOAK=Benchmarks/CTimerCoreBench/soak.c
[ -f "$SOAK" ] || { echo "scripts/soak.sh: missing $SOAK" >&2; exit 1; }

echo "=== building with $CC ${FLAGS[*]}" >&2
"$CC" "${FLAGS[@]}" "${CORE[@]}" "$SOAK" -lpthread -o build/release/soak
echo "=== build/release/soak $*" >&2
exec build/release/soak "$@"
