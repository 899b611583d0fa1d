#!/usr/bin/env bash
# Builds the C core in release mode and runs it: the countdown example, then
# the core benchmark.
#
#   scripts/run.sh            example, then the full benchmark
#   scripts/run.sh --quick    example, then a short benchmark run
#
# Any arguments are passed to the benchmark. Binaries go to build/release/.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    PATH="/opt/swift/usr/bin:$PATH"
fi
# The toolchain's clang (next to swift), else any clang, else gcc.
CC=${CC:-}
if [ -z "$CC" ]; then
    swift_dir=$(dirname "$(readlink -f "$(command -v swift 2>/dev/null || echo /nonexistent)")")
    if [ -x "$swift_dir/clang" ]; then
        CC=$swift_dir/clang
    elif command -v clang >/dev/null 2>&1; then
        CC=clang
    else
        CC=gcc
    fi
fi

shopt -s nullglob
CORE=(Sources/CTimerCore/*.c)
shopt -u nullglob
EXAMPLE=Examples/C/countdown.c
BENCH=Benchmarks/CTimerCoreBench/core_bench.c
for file in "$EXAMPLE" "$BENCH"; do
    [ -f "$file" ] || { echo "scripts/run.sh: missing $file" >&2; exit 1; }
done
[ ${#CORE[@]} -gt 0 ] || { echo "scripts/run.sh: no sources in Sources/CTimerCore" >&2; exit 1; }

FLAGS=(-std=c11 -Wall -Wextra -Werror -O2 -DNDEBUG -D_GNU_SOURCE -Iinclude -ISources/CTimerCore)
mkdir -p build/release

echo "=== building with $CC ${FLAGS[*]}"
"$CC" "${FLAGS[@]}" "${CORE[@]}" "$EXAMPLE" -lpthread -o build/release/countdown
"$CC" "${FLAGS[@]}" "${CORE[@]}" "$BENCH" -lpthread -ldl -lm -o build/release/core_bench

echo "=== build/release/countdown"
build/release/countdown

echo "=== build/release/core_bench $*"
build/release/core_bench "$@"
