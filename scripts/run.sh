#!/usr/bin/env bash
# Builds TimerKit in release mode and runs it: the C countdown example, the C
# core benchmark, the precise timers' benchmark (a 1 ms timer, plain against
# TK_TIMER_PRECISE, in alternating rounds), `timerkit clocks`, one screen of `timerkit demo` (printed
# after two seconds, no terminal needed), then the side-by-side benchmarks
# (Benchmarks/'s timer-peers: TimerKit against Foundation, Dispatch,
# Task.sleep and NIO; countdown-peers: CountdownCenter against a LoopTimer a
# countdown and one ticker walking them all; frame-peers: FrameTicker against
# a Task.sleep loop, DispatchSourceTimer and NIO's scheduleRepeatedTask at
# 60, 120 and 240 Hz; executor-peers: an actor on a TimerLoop sleeping on
# TimerKit's clock against a default actor sleeping with Task.sleep; each
# measured in one run; timer-cost: a LoopTimer against the C core at 1k, 100k
# and 1M pending, without the malloc interposer, beside the C core with each
# handle in a Swift object and in a malloc'd block of its own, and TimerKit's
# TimerCallbacks (no object per timer), five runs in
# processes of their own, the cost targets judged on their median; queue-peers: QueueTimer
# against DispatchSourceTimer). timer-peers also draws its
# figures as SVG charts into build/charts/.
#
#   scripts/run.sh            the example, then the benchmarks (about 6 minutes)
#   scripts/run.sh --quick    the example, then short benchmark runs
#
# C binaries go to build/release/, the Swift ones to .build/release/ and
# Benchmarks/.build/release/; the charts to build/charts/; each Swift build's
# output also to build/logs/run-build-PRODUCT.log. A Swift build whose
# SwiftPM tool itself crashes is run again (scripts/lib/swiftpm-crash.sh),
# and named at the end.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

log=scripts/run.sh
# shellcheck source=scripts/lib/release-c.sh
. scripts/lib/release-c.sh
# shellcheck source=scripts/lib/swiftpm-crash.sh
. scripts/lib/swiftpm-crash.sh
mkdir -p build/logs
# swift_build PRODUCT ARGS...: `swift build ARGS...` (its output also in
# build/logs/run-build-PRODUCT.log), run again if the SwiftPM tool itself
# crashes (scripts/lib/swiftpm-crash.sh); exits on a failure, after naming
# any crash run again.
swift_build() {
    local product=$1
    shift
    swiftpm_run "build/logs/run-build-$product.log" swift build "$@"
    if [ "$SWIFTPM_STATUS" -ne 0 ]; then
        swiftpm_print_crashes "note: "
        echo "scripts/run.sh: swift build $* failed (status $SWIFTPM_STATUS; log: build/logs/run-build-$product.log)" >&2
        exit 1
    fi
}
EXAMPLE=Examples/C/countdown.c
BENCH=Benchmarks/CTimerCoreBench/core_bench.c
PRECISE=Benchmarks/CTimerCoreBench/precise_bench.c
for file in "$EXAMPLE" "$BENCH" "$PRECISE"; do
    [ -f "$file" ] || { echo "scripts/run.sh: missing $file" >&2; exit 1; }
done

echo "=== building with $CC ${FLAGS[*]}"
"$CC" "${FLAGS[@]}" "${CORE[@]}" "$EXAMPLE" -lpthread -o build/release/countdown
"$CC" "${FLAGS[@]}" "${CORE[@]}" "$BENCH" -lpthread -ldl -lm -o build/release/core_bench
"$CC" "${FLAGS[@]}" "${CORE[@]}" "$PRECISE" -lpthread -o build/release/precise_bench

echo "=== build/release/countdown"
build/release/countdown

QUICK=()
case "${1:-}" in
"") ;;
--quick) QUICK=(--quick) ;;
*) echo "usage: scripts/run.sh [--quick]" >&2; exit 2 ;;
esac

echo "=== build/release/core_bench ${QUICK[*]}"
build/release/core_bench "${QUICK[@]}"
echo "=== build/release/precise_bench ${QUICK[*]}"
build/release/precise_bench "${QUICK[@]}"

echo "=== swift build -c release --product timerkit"
swift_build timerkit -c release --product timerkit
echo "=== .build/release/timerkit clocks"
.build/release/timerkit clocks
# A state file not there yet (an empty one is not a state file: the demo
# would leave it alone and say it could not restore it, status 1).
DEMO_DIR=$(mktemp -d "${TMPDIR:-/tmp}/timerkit-demo.XXXXXX")
echo "=== .build/release/timerkit demo --print-after 2 (interactive: .build/release/timerkit demo)"
.build/release/timerkit demo --print-after 2 --sale-seconds 90 --state "$DEMO_DIR/demo.state"
rm -rf "$DEMO_DIR"
echo "=== .build/release/timerkit fps --rate 60 --seconds 3 --work-ms 4 --jank 5 --json"
.build/release/timerkit fps --rate 60 --seconds 3 --work-ms 4 --jank 5 --json
# Builds one of Benchmarks/' programs in release and runs it with `args`.
run_peer() { # product, args...
    local product=$1
    shift
    echo "=== swift build -c release --package-path Benchmarks --product $product"
    swift_build "$product" -c release --package-path Benchmarks --product "$product"
    echo "=== Benchmarks/.build/release/$product $*"
    Benchmarks/.build/release/"$product" "$@"
}
run_peer timer-peers ${QUICK[@]+"${QUICK[@]}"} --charts build/charts
for product in countdown-peers timer-cost executor-peers queue-peers frame-peers; do
    run_peer "$product" ${QUICK[@]+"${QUICK[@]}"}
done
echo "=== timer-peers' charts of this run (SVG, open in a browser):"
for chart in lateness-cdf cost-vs-pending wakeups-vs-tolerance; do
    echo "    $PWD/build/charts/$chart.svg"
done
swiftpm_print_crashes "note: "
