#!/usr/bin/env bash
# The soak run: Benchmarks/CTimerCoreBench/soak.c built with -O2 and run, by
# default for 10 minutes: a real loop holding 100,000 pending timers and
# watching pipes while four threads schedule, cancel and reschedule into it.
# It samples RSS and open descriptors, checks that both stay flat after the
# warm-up and that every fire is accounted for, and exits non-zero if not.
#
#   scripts/soak.sh [--seconds N] [--sample-seconds N] [--csv PATH]
#
# Not part of the test run, which runs it for 6 seconds only.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

CC=${CC:-}
if [ -z "$CC" ]; then
    if command -v swift >/dev/null 2>&1 &&
        [ -x "$(dirname "$(readlink -f "$(command -v swift)")")/clang" ]; then
        CC=$(dirname "$(readlink -f "$(command -v swift)")")/clang
    elif command -v clang >/dev/null 2>&1; then
        CC=clang
    else
        CC=gcc
    fi
fi
mkdir -p build/release
"$CC" -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -D_GNU_SOURCE -Iinclude \
    Sources/CTimerCore/*.c Benchmarks/CTimerCoreBench/soak.c -lpthread -o build/release/soak
echo "=== build/release/soak $*"
exec build/release/soak "$@"
