#!/usr/bin/env bash
# The test command of TimerKit: builds and runs every test of the package.
#
#   scripts/test.sh                  run everything
#   scripts/test.sh --install-deps   only install missing Debian packages
#
# Stages, in order; the first failure stops the run with a non-zero exit:
#   deps    install the Debian packages the build needs, only if missing
#   layout  check that every source the stages below need exists
#   harness scripts/check-swiftpm-crash.sh: the SwiftPM commands below are
#           run again when the SwiftPM tool itself crashes (a toolchain
#           fault, named in the summary), and only then
#   asan    each Tests/CTimerCoreTests/test_*.c and Tests/CTimerSNTPTests/test_*.c,
#           built with clang under AddressSanitizer + UndefinedBehaviorSanitizer,
#           and run
#   gcc     the core and each Examples/C/*.c built with gcc, example run;
#           the core as a shared library (gcc and clang) exports only tk_ names
#   fuzz    Tests/CTimerCoreTests/fuzz_loop.c (the loop against its reference
#           model) and Tests/CTimerSNTPTests/fuzz_sntp.c (the SNTP reply
#           parser) under libFuzzer, TK_FUZZ_RUNS executions each (fewer
#           before the TK_FUZZ_SECONDS cap fail the stage), over copies of
#           their corpora
#   bench   the core benchmark built with -O2, run with --quick; the precise
#           timers' benchmark (precise_bench.c) with --quick (never early, or
#           it fails); the soak (Benchmarks/CTimerCoreBench/soak.c) built with
#           -O2, run for 6 seconds
#   swift   swift build, swift test
#   misuse  scripts/check-misuse.sh: Tests/MisuseTests must not compile (or must)
#   docs    scripts/build-docs.sh: the DocC catalogs, warnings as errors
#   snippets  scripts/check-snippets.sh: every Swift code block of the docs compiles
#   tsan    swift test --sanitize=thread (build folder $TMPDIR/timerkit-tsan-build)
#   timerkit  the timerkit command in release: clocks, --help, bad command
#           lines refused, and output that cannot be written (/dev/full, closed,
#           a broken pipe) reported with status 1
#   peers   the Benchmarks/ package (ordo-one/benchmark, SwiftNIO): its
#           harness tests, and in release timer-peers --quick (its SVG charts
#           written to build/charts/ and checked with xmllint; at most one
#           allocation per LoopTimer pair, none per C core pair), timer-cost
#           --quick (its verdicts on the cost targets; also --runs 2, and a
#           bad --runs refused), frame-peers --quick, executor-peers --quick,
#           countdown-peers --quick, queue-peers --quick and the suite's
#           benchmark list
#   trusted scripts/test-trusted-time.sh: installs chrony and faketime if
#           missing, syncs from chrony on loopback under a faked wall clock
#   demo    scripts/test-demo.sh: `timerkit demo` driven in tmux (send-keys,
#           capture-pane), and under libfaketime with the wall clock stepped
#   fps     scripts/test-fps.sh: `timerkit fps` in tmux, and its --json summary
#
# The last line printed on success is `N passed, N failed`: the sum of the C
# test programs' own summary lines and the swift test totals.
#
# Environment:
#   TK_SEED          seed for the C tests and the fuzzer (default: random,
#                    printed first; set it to reproduce a run)
#   TK_FUZZ_RUNS     executions per fuzz target (default 1000000)
#   TK_FUZZ_SECONDS  the time cap per target (default 2400; 0 runs the corpus
#                    only)
#   TK_TEST_TIMEOUT  seconds any one test program may run (default 900)
#
# Everything is built under build/ (ignored by git); logs go to build/logs/.

set -Eeuo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

TK_SEED=${TK_SEED:-$(( (RANDOM << 15 | RANDOM) + 1 ))}
export TK_SEED

# --- toolchain ----------------------------------------------------------------

if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    PATH="/opt/swift/usr/bin:$PATH"
fi

# The clang shipped with the Swift toolchain has libFuzzer, the sanitizer
# runtimes and lld; use it rather than any other clang on PATH.
toolchain_clang() {
    local swift_bin
    swift_bin=$(command -v swift 2>/dev/null) || { echo clang; return; }
    swift_bin=$(readlink -f "$swift_bin")
    if [ -x "$(dirname "$swift_bin")/clang" ]; then
        echo "$(dirname "$swift_bin")/clang"
    else
        echo clang
    fi
}

# --- Debian packages --------------------------------------------------------

package_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# Installs, non-interactively, whichever of the given packages are missing.
apt_install_missing() {
    local missing=() package
    for package in "$@"; do
        package_installed "$package" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing missing Debian packages: ${missing[*]}"
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 ||
            { echo "error: need root (or sudo) to install: ${missing[*]}" >&2; return 1; }
        sudo=(sudo)
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "${missing[@]}"
}

# gcc for the second-compiler build; libc headers; binutils; the C++ runtime
# that libFuzzer links against (for the gcc that clang picks up); tmux and
# faketime for the demo and fps stages (chrony is installed by the trusted stage, which
# keeps the package from starting the system's NTP service); libxml2-utils
# (xmllint) for the peers stage's check of the benchmark charts.
install_deps() {
    if ! command -v dpkg-query >/dev/null 2>&1; then
        echo "not a Debian system: not installing packages; the builds will tell what is missing"
        return 0
    fi
    apt_install_missing gcc libc6-dev binutils coreutils python3 tmux faketime libxml2-utils
    local gcc_major
    gcc_major=$(gcc -dumpversion | cut -d. -f1)
    apt_install_missing "libstdc++-${gcc_major}-dev"
}

if [ "${1:-}" = "--install-deps" ]; then
    install_deps
    exit 0
elif [ $# -gt 0 ]; then
    echo "usage: scripts/test.sh [--install-deps]" >&2
    exit 2
fi

# --- stage bookkeeping --------------------------------------------------------

LOGS=build/logs
PASSED=0
FAILED=0
STAGE=setup
STAGE_START=$SECONDS
SUMMARY=()

begin_stage() {
    STAGE=$1
    STAGE_START=$SECONDS
    echo
    echo "=== [$STAGE] $2"
}

end_stage() {
    local seconds=$((SECONDS - STAGE_START))
    SUMMARY+=("$(printf '  %-7s %5ss  %s' "$STAGE" "$seconds" "$1")")
    echo "--- [$STAGE] ok in ${seconds}s: $1"
}

print_summary() {
    echo
    echo "=== summary (seed $TK_SEED, total $((SECONDS))s)"
    local line
    for line in "${SUMMARY[@]+"${SUMMARY[@]}"}"; do
        echo "$line"
    done
    swiftpm_print_crashes "  note: "
}

# Reports a failure of the current stage and exits non-zero.
fail() {
    trap - ERR
    local seconds=$((SECONDS - STAGE_START))
    SUMMARY+=("$(printf '  %-7s %5ss  FAILED: %s' "$STAGE" "$seconds" "$1")")
    print_summary
    echo "$PASSED passed, $((FAILED > 0 ? FAILED : 1)) failed"
    echo "scripts/test.sh: FAILED in stage [$STAGE]: $1 (rerun with TK_SEED=$TK_SEED)" >&2
    exit 1
}

trap 'fail "command failed (status $?) at line $LINENO: $BASH_COMMAND"' ERR

# Runs a command with its output shown and saved to a log; sets RUN_STATUS to
# the command's exit status (a failure here does not end the script).
run_logged() {
    local log=$1
    shift
    if "$@" 2>&1 | tee "$log"; then
        RUN_STATUS=0
    else
        RUN_STATUS=${PIPESTATUS[0]}
    fi
}

# shellcheck source=scripts/lib/swiftpm-crash.sh
. scripts/lib/swiftpm-crash.sh

# run_swiftpm [--hide-started] LOG COMMAND...: run_logged for a SwiftPM
# command (swift build, swift test, swift package), run again when the
# SwiftPM tool itself crashed (scripts/lib/swiftpm-crash.sh); sets RUN_STATUS.
# The summary names each command run again.
run_swiftpm() {
    swiftpm_run "$@"
    RUN_STATUS=$SWIFTPM_STATUS
}

# The last `N passed, N failed` line of a log, or nothing.
summary_line() {
    grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1 || true
}

# Runs a checking script whose last line is `N passed, N failed`, adds its
# counts, and fails the stage if it failed or printed no such line.
run_counted() {
    local log=$1 what=$2
    shift 2
    run_logged "$log" "$@"
    local line
    line=$(summary_line "$log")
    if [ -n "$line" ]; then
        read -r p _ f _ <<<"$line"
        PASSED=$((PASSED + p))
        FAILED=$((FAILED + f))
    fi
    [ "$RUN_STATUS" -eq 0 ] || fail "$what failed${line:+ ($line)} (log: $log)"
    [ -n "$line" ] || fail "$what printed no 'N passed, N failed' line (log: $log)"
    COUNTED_LINE=$line
}

# --- deps ---------------------------------------------------------------------

TK_FUZZ_RUNS=${TK_FUZZ_RUNS:-1000000}
TK_FUZZ_SECONDS=${TK_FUZZ_SECONDS:-2400}
TK_TEST_TIMEOUT=${TK_TEST_TIMEOUT:-900}
[[ "$TK_FUZZ_RUNS" =~ ^[1-9][0-9]*$ ]] || fail "TK_FUZZ_RUNS must be a positive number of runs"
[[ "$TK_FUZZ_SECONDS" =~ ^[0-9]+$ ]] || fail "TK_FUZZ_SECONDS must be a whole number of seconds"
[[ "$TK_TEST_TIMEOUT" =~ ^[1-9][0-9]*$ ]] || fail "TK_TEST_TIMEOUT must be a positive number of seconds"
[[ "$TK_SEED" =~ ^(0|[1-9][0-9]{0,17})$ ]] || fail "TK_SEED must be a whole number of at most 18 digits, with no leading zero"

echo "seed: TK_SEED=$TK_SEED"

begin_stage deps "Debian packages and toolchain"
install_deps || fail "could not install the Debian packages the build needs"
command -v swift >/dev/null 2>&1 || fail "swift not found (expected on PATH or at /opt/swift/usr/bin)"
CLANG=$(toolchain_clang)
command -v "$CLANG" >/dev/null 2>&1 || fail "clang not found"
command -v gcc >/dev/null 2>&1 || fail "gcc not found"
echo "swift: $(swift --version 2>/dev/null | head -n 1)"
echo "clang: $CLANG ($("$CLANG" --version | head -n 1))"
echo "gcc:   $(gcc --version | head -n 1)"
end_stage "toolchain ready"

# --- layout -------------------------------------------------------------------

begin_stage layout "sources the stages need"
shopt -s nullglob
CORE=(Sources/CTimerCore/*.c)
SNTP=(Sources/CTimerSNTP/*.c)
CORE_TESTS=(Tests/CTimerCoreTests/test_*.c)
SNTP_TESTS=(Tests/CTimerSNTPTests/test_*.c)
EXAMPLES=(Examples/C/*.c)
SWIFT_TESTS=(Tests/TimerKitTests/*.swift Tests/TrustedTimeTests/*.swift Tests/CountdownsTests/*.swift)
shopt -u nullglob
FUZZER=Tests/CTimerCoreTests/fuzz_loop.c
FUZZ_CORPUS=Tests/CTimerCoreTests/fuzz-corpus
SNTP_FUZZER=Tests/CTimerSNTPTests/fuzz_sntp.c
SNTP_CORPUS=Tests/CTimerSNTPTests/fuzz-corpus
BENCH=Benchmarks/CTimerCoreBench/core_bench.c
SOAK=Benchmarks/CTimerCoreBench/soak.c
PRECISE=Benchmarks/CTimerCoreBench/precise_bench.c
missing=()
for file in include/CTimerCore.h include/module.modulemap Package.swift \
    Sources/CTimerCore/clock.c Sources/CTimerCore/heap.c Sources/CTimerCore/heap.h \
    Sources/CTimerCore/loop.c Sources/CTimerSNTP/include/CTimerSNTP.h \
    "$FUZZER" "$SNTP_FUZZER" "$BENCH" "$SOAK" "$PRECISE" scripts/test-trusted-time.sh scripts/test-demo.sh \
    scripts/test-fps.sh scripts/lib/terminal-test.sh scripts/lib/test-harness.sh \
    scripts/lib/swiftpm-crash.sh scripts/check-swiftpm-crash.sh \
    Benchmarks/Package.swift Benchmarks/Benchmarks/TimerBenchmarks/TimerBenchmarks.swift; do
    [ -f "$file" ] || missing+=("$file")
done
[ ${#CORE_TESTS[@]} -gt 0 ] || missing+=("Tests/CTimerCoreTests/test_*.c")
[ ${#SNTP_TESTS[@]} -gt 0 ] || missing+=("Tests/CTimerSNTPTests/test_*.c")
[ ${#SNTP[@]} -gt 0 ] || missing+=("Sources/CTimerSNTP/*.c")
[ ${#EXAMPLES[@]} -gt 0 ] || missing+=("Examples/C/*.c")
[ -d Tests/TimerKitTests ] && [ -d Tests/TrustedTimeTests ] && [ -d Tests/CountdownsTests ] ||
    missing+=("Tests/TimerKitTests/, Tests/TrustedTimeTests/ and Tests/CountdownsTests/")
for corpus in "$FUZZ_CORPUS" "$SNTP_CORPUS"; do
    if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
        missing+=("$corpus/ (non-empty)")
    fi
done
[ ${#missing[@]} -eq 0 ] || fail "missing: ${missing[*]}"
mkdir -p build/asan build/gcc build/fuzz build/bench "$LOGS"
end_stage "${#CORE[@]} core files, ${#SNTP[@]} SNTP files, $((${#CORE_TESTS[@]} + ${#SNTP_TESTS[@]})) C tests, ${#EXAMPLES[@]} examples"

# --- harness: the test harness's own checks ------------------------------------

begin_stage harness "scripts/check-swiftpm-crash.sh: a SwiftPM tool's own crash is run again, a test program's is not"
run_counted "$LOGS/harness.log" scripts/check-swiftpm-crash.sh scripts/check-swiftpm-crash.sh
end_stage "$COUNTED_LINE"

COMMON_FLAGS=(-std=c11 -Wall -Wextra -Wpedantic -Werror -D_GNU_SOURCE -Iinclude -ISources/CTimerCore
    -ISources/CTimerSNTP/include -ITests/CTimerCoreTests)
SANITIZE_FLAGS=(-g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all
    -fno-omit-frame-pointer)
# lld from the toolchain: the default gold linker floods sanitizer builds
# with warnings about local symbols.
CLANG_LINK=(-fuse-ld=lld)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# --- asan: C tests under sanitizers ---------------------------------------------

begin_stage asan "C tests with clang, AddressSanitizer + UndefinedBehaviorSanitizer"
echo "flags: ${COMMON_FLAGS[*]} ${SANITIZE_FLAGS[*]}"
c_passed=0
c_failed=0
for source in "${CORE_TESTS[@]}" "${SNTP_TESTS[@]}"; do
    name=$(basename "$source" .c)
    binary=build/asan/$name
    log=$LOGS/$name.log
    # A test links the module it tests: the core, or the SNTP client.
    case "$source" in
    Tests/CTimerSNTPTests/*) module=("${SNTP[@]}") ;;
    *) module=("${CORE[@]}") ;;
    esac
    # Extra link flags a test names in a `test link flags:` comment (e.g. to
    # wrap an allocator function and make it fail on demand).
    read -r -a extra <<<"$(sed -n -E 's|^/\* test link flags: (.*) \*/$|\1|p' "$source" | head -n 1)"
    echo "--- build $name"
    "$CLANG" "${COMMON_FLAGS[@]}" "${SANITIZE_FLAGS[@]}" "${CLANG_LINK[@]}" \
        "${module[@]}" "$source" -lpthread ${extra[@]+"${extra[@]}"} -o "$binary" ||
        fail "could not build $source"
    echo "--- run $name (TK_SEED=$TK_SEED)"
    run_logged "$log" timeout -k 10 "$TK_TEST_TIMEOUT" "$binary"
    line=$(summary_line "$log")
    if [ -n "$line" ]; then
        read -r p _ f _ <<<"$line"
        c_passed=$((c_passed + p))
        c_failed=$((c_failed + f))
        PASSED=$((PASSED + p))
        FAILED=$((FAILED + f))
    fi
    if [ "$RUN_STATUS" -eq 124 ] || [ "$RUN_STATUS" -eq 137 ]; then
        fail "$name timed out after ${TK_TEST_TIMEOUT}s (log: $log)"
    elif [ "$RUN_STATUS" -ne 0 ]; then
        fail "$name exited with status $RUN_STATUS${line:+ ($line)} (log: $log)"
    elif [ -z "$line" ]; then
        fail "$name printed no 'N passed, N failed' line (log: $log)"
    elif [ "$f" -ne 0 ]; then
        fail "$name reported $line but exited 0 (log: $log)"
    fi
done
end_stage "$((${#CORE_TESTS[@]} + ${#SNTP_TESTS[@]})) programs: $c_passed passed, $c_failed failed"

# --- gcc: second compiler, example --------------------------------------------

begin_stage gcc "core and examples with gcc -O2"
GCC_FLAGS=(-std=c11 -Wall -Wextra -Wpedantic -Werror -O2 -D_GNU_SOURCE -Iinclude -ISources/CTimerCore)
echo "flags: ${GCC_FLAGS[*]}"
for source in "${EXAMPLES[@]}"; do
    name=$(basename "$source" .c)
    echo "--- build $name"
    gcc "${GCC_FLAGS[@]}" "${CORE[@]}" "$source" -lpthread -o "build/gcc/$name" ||
        fail "gcc could not build $source"
    echo "--- run $name"
    run_logged "$LOGS/example-$name.log" timeout -k 10 "$TK_TEST_TIMEOUT" "build/gcc/$name"
    [ "$RUN_STATUS" -eq 0 ] ||
        fail "example $name exited with status $RUN_STATUS (log: $LOGS/example-$name.log)"
done
# A shared build of each C module (the core, the SNTP client) exports only
# the public tk_ names: the internal tk__ ones are hidden in the sources
# (TK__INTERNAL), not by -fvisibility. The SNTP client is built with the
# same strict flags.
for module in core sntp; do
    if [ "$module" = core ]; then sources=("${CORE[@]}"); else sources=("${SNTP[@]}"); fi
    for compiler in gcc "$CLANG"; do
        tag=$(basename "$compiler")
        library=build/gcc/libctimer$module-$tag.so
        link=()
        [ "$compiler" = gcc ] || link=("${CLANG_LINK[@]}")
        echo "--- exports of $library"
        "$compiler" "${GCC_FLAGS[@]}" -ISources/CTimerSNTP/include -shared -fPIC "${link[@]}" \
            "${sources[@]}" -lpthread -o "$library" ||
            fail "$tag could not build the $module module as a shared library"
        symbols=$(nm -D --defined-only "$library") || fail "nm could not read $library"
        # Public: tk_ then a letter or digit (tk__ is internal). The linker's
        # own names are ignored.
        stray=$(awk '{ print $NF }' <<<"$symbols" |
            grep -vxE '_init|_fini|__bss_start|_edata|_end|tk_[a-z0-9][a-z0-9_]*' || true)
        if [ -n "$stray" ]; then
            echo "$library exports names that are not public tk_ names:"
            sed 's/^/    /' <<<"$stray"
            fail "$tag: the shared $module module exports $(wc -l <<<"$stray") non-public names: $(tr '\n' ' ' <<<"$stray")"
        fi
        echo "$(grep -c ' tk_' <<<"$symbols") names exported, all public tk_ names"
    done
done
end_stage "${#EXAMPLES[@]} examples built and ran; shared core and SNTP libraries export only tk_ names (gcc, clang)"

# --- fuzz -----------------------------------------------------------------------

begin_stage fuzz "libFuzzer on fuzz_loop and fuzz_sntp, $TK_FUZZ_RUNS runs each (at most ${TK_FUZZ_SECONDS}s)"
"$CLANG" "${COMMON_FLAGS[@]}" -g -O1 -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=all -fno-omit-frame-pointer "${CLANG_LINK[@]}" \
    "${CORE[@]}" "$FUZZER" -lpthread -o build/fuzz/fuzz_loop ||
    fail "could not build $FUZZER"
rm -rf build/fuzz/corpus build/fuzz/artifacts
cp -R "$FUZZ_CORPUS" build/fuzz/corpus
mkdir -p build/fuzz/artifacts
if [ "$TK_FUZZ_SECONDS" -eq 0 ]; then
    fuzz_limit=(-runs=0)
else
    fuzz_limit=(-runs="$TK_FUZZ_RUNS" -max_total_time="$TK_FUZZ_SECONDS")
fi
# A target stopped by the time cap before its runs fails the stage: every
# run fuzzes each target TK_FUZZ_RUNS times, never fewer.
check_fuzz_runs() { # name, "Done N runs in S second(s)"
    local runs
    runs=$(sed -E 's/^Done ([0-9]+) runs.*/\1/' <<<"$2")
    [ "$TK_FUZZ_SECONDS" -eq 0 ] || [ "$runs" -ge "$TK_FUZZ_RUNS" ] ||
        fail "$1 made $runs runs, fewer than TK_FUZZ_RUNS=$TK_FUZZ_RUNS, before the ${TK_FUZZ_SECONDS}s cap"
}
# libFuzzer takes a 32-bit seed; 0 would mean "pick one".
fuzz_seed=$((TK_SEED % 4294967295 + 1))
run_logged "$LOGS/fuzz_loop.log" timeout -k 10 $((TK_FUZZ_SECONDS + 600)) \
    build/fuzz/fuzz_loop "${fuzz_limit[@]}" -seed="$fuzz_seed" -timeout=60 \
    -print_final_stats=1 -artifact_prefix=build/fuzz/artifacts/ build/fuzz/corpus
if [ "$RUN_STATUS" -ne 0 ]; then
    artifact=$(find build/fuzz/artifacts -type f | head -n 1)
    fail "fuzz_loop failed (status $RUN_STATUS, -seed=$fuzz_seed${artifact:+, input: $artifact}; log: $LOGS/fuzz_loop.log)"
fi
fuzz_done=$(grep -E '^Done [0-9]+ runs' "$LOGS/fuzz_loop.log" | tail -n 1 || true)
[ -n "$fuzz_done" ] || fail "fuzz_loop did not report its runs (log: $LOGS/fuzz_loop.log)"
check_fuzz_runs fuzz_loop "$fuzz_done"

# The SNTP reply parser, over a copy of its own corpus.
"$CLANG" "${COMMON_FLAGS[@]}" -g -O1 -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=all -fno-omit-frame-pointer "${CLANG_LINK[@]}" \
    "${SNTP[@]}" "$SNTP_FUZZER" -o build/fuzz/fuzz_sntp ||
    fail "could not build $SNTP_FUZZER"
rm -rf build/fuzz/sntp-corpus
cp -R "$SNTP_CORPUS" build/fuzz/sntp-corpus
run_logged "$LOGS/fuzz_sntp.log" timeout -k 10 $((TK_FUZZ_SECONDS + 600)) \
    build/fuzz/fuzz_sntp "${fuzz_limit[@]}" -seed="$fuzz_seed" -timeout=60 \
    -print_final_stats=1 -artifact_prefix=build/fuzz/artifacts/ build/fuzz/sntp-corpus
if [ "$RUN_STATUS" -ne 0 ]; then
    artifact=$(find build/fuzz/artifacts -type f | head -n 1)
    fail "fuzz_sntp failed (status $RUN_STATUS, -seed=$fuzz_seed${artifact:+, input: $artifact}; log: $LOGS/fuzz_sntp.log)"
fi
sntp_done=$(grep -E '^Done [0-9]+ runs' "$LOGS/fuzz_sntp.log" | tail -n 1 || true)
[ -n "$sntp_done" ] || fail "fuzz_sntp did not report its runs (log: $LOGS/fuzz_sntp.log)"
check_fuzz_runs fuzz_sntp "$sntp_done"
end_stage "fuzz_loop: $fuzz_done; fuzz_sntp: $sntp_done; no crash"

# --- bench: smoke run -------------------------------------------------------------

begin_stage bench "core benchmark -O2 --quick, precise timers --quick and a 6-second soak (smoke)"
"$CLANG" "${COMMON_FLAGS[@]}" -O2 "${CLANG_LINK[@]}" "${CORE[@]}" "$BENCH" \
    -lpthread -ldl -lm -o build/bench/core_bench ||
    fail "could not build $BENCH"
run_logged "$LOGS/core_bench.log" timeout -k 10 "$TK_TEST_TIMEOUT" build/bench/core_bench --quick
[ "$RUN_STATUS" -eq 0 ] || fail "core_bench --quick exited with status $RUN_STATUS (log: $LOGS/core_bench.log)"
# Plain against precise timers, 600 fires a side: the figures are printed,
# not judged (a shared machine's tail is noise), but a fire before its
# deadline, or a failed call, fails the run.
"$CLANG" "${COMMON_FLAGS[@]}" -O2 "${CLANG_LINK[@]}" "${CORE[@]}" "$PRECISE" -lpthread \
    -o build/bench/precise_bench || fail "could not build $PRECISE"
run_logged "$LOGS/precise_bench.log" timeout -k 10 "$TK_TEST_TIMEOUT" build/bench/precise_bench --quick
[ "$RUN_STATUS" -eq 0 ] ||
    fail "precise_bench --quick exited with status $RUN_STATUS (log: $LOGS/precise_bench.log)"
# The soak (10 minutes by hand, scripts/soak.sh) for a few seconds, so that
# it keeps working: a sample a second, the first 2 s left out of the verdict.
# The exit status says whether every timer was accounted for (1 if not) and
# whether the resident set and the descriptors stayed flat (3 if not).
"$CLANG" "${COMMON_FLAGS[@]}" -O2 "${CLANG_LINK[@]}" "${CORE[@]}" "$SOAK" -lpthread -o build/bench/soak ||
    fail "could not build $SOAK"
run_logged "$LOGS/soak.log" timeout -k 10 "$TK_TEST_TIMEOUT" build/bench/soak \
    --seconds 6 --sample-seconds 1 --warmup 2 --seed "$TK_SEED" --csv build/bench/soak.csv
[ "$RUN_STATUS" -eq 0 ] || fail "soak --seconds 6 exited with status $RUN_STATUS (log: $LOGS/soak.log)"
# Numbers not written in decimal digits alone are refused (status 64)
# before anything runs, as their usages write them.
for bad in "core_bench --seed +5" "core_bench --fires 10x" "core_bench --reps -1" \
    "precise_bench --fires +600" "soak --seconds +6" "soak --seed 0x10"; do
    run_logged "$LOGS/bench-bad-number.log" timeout -k 10 60 build/bench/$bad
    [ "$RUN_STATUS" -eq 64 ] || fail "$bad was not refused with status 64 (log: $LOGS/bench-bad-number.log)"
done
end_stage "core_bench --quick, precise_bench --quick and soak --seconds 6 ran (every timer accounted for, flat); 6 bad numbers refused"

# --- swift ------------------------------------------------------------------------

begin_stage swift "swift build, swift test"
run_swiftpm "$LOGS/swift-build.log" swift build
[ "$RUN_STATUS" -eq 0 ] || fail "swift build failed (log: $LOGS/swift-build.log)"
# The console leaves out Swift Testing's "started" lines; the log keeps them.
run_swiftpm --hide-started "$LOGS/swift-test.log" timeout -k 10 "$TK_TEST_TIMEOUT" swift test
# XCTest: "Executed N tests, with F failures" (the last one is the total).
xc_line=$(grep -E 'Executed [0-9]+ tests?, with [0-9]+ failures?' "$LOGS/swift-test.log" | tail -n 1 || true)
xc_tests=0
xc_failed=0
if [ -n "$xc_line" ]; then
    xc_tests=$(sed -E 's/.*Executed ([0-9]+) tests?.*/\1/' <<<"$xc_line")
    xc_failed=$(sed -E 's/.*with ([0-9]+) failures?.*/\1/' <<<"$xc_line")
    ((xc_failed <= xc_tests)) || xc_failed=$xc_tests
fi
# Swift Testing: "Test run with N tests ... passed|failed"; failed tests each
# end with "Test ... failed after".
st_line=$(grep -E 'Test run with [0-9]+ tests?' "$LOGS/swift-test.log" | tail -n 1 || true)
st_tests=0
st_failed=0
if [ -n "$st_line" ]; then
    st_tests=$(sed -E 's/.*Test run with ([0-9]+) tests?.*/\1/' <<<"$st_line")
    st_failed=$(grep -E '^\S+ Test .* failed after' "$LOGS/swift-test.log" | grep -vc 'Test run with' || true)
fi
swift_passed=$((xc_tests - xc_failed + st_tests - st_failed))
swift_failed=$((xc_failed + st_failed))
PASSED=$((PASSED + swift_passed))
FAILED=$((FAILED + swift_failed))
if [ "$RUN_STATUS" -ne 0 ] && [ -z "$xc_line$st_line" ]; then
    first_error=$(grep -m 1 -E '(^|: )error: ' "$LOGS/swift-test.log" || true)
    fail "swift test could not build or start the tests (status $RUN_STATUS${first_error:+: $first_error}; log: $LOGS/swift-test.log)"
fi
[ "$RUN_STATUS" -eq 0 ] ||
    fail "swift test failed (status $RUN_STATUS, $swift_passed passed, $swift_failed failed; log: $LOGS/swift-test.log)"
[ $((xc_tests + st_tests)) -gt 0 ] || fail "swift test ran no tests (log: $LOGS/swift-test.log)"
[ "$swift_failed" -eq 0 ] || fail "swift test reported $swift_failed failed tests but exited 0"
end_stage "swift test: $swift_passed passed, $swift_failed failed (XCTest $xc_tests, Swift Testing $st_tests)"

# --- misuse: code the API must refuse -------------------------------------------

begin_stage misuse "Tests/MisuseTests: data races and clock mix-ups must not compile"
run_counted "$LOGS/misuse.log" scripts/check-misuse.sh scripts/check-misuse.sh .build/debug
end_stage "$COUNTED_LINE"

# --- docs: the DocC catalogs ------------------------------------------------------

begin_stage docs "DocC catalogs built with the toolchain's docc, warnings as errors"
run_counted "$LOGS/docs.log" scripts/build-docs.sh scripts/build-docs.sh build/docs
end_stage "$COUNTED_LINE"

# --- snippets: the documentation's code compiles -----------------------------------

begin_stage snippets "every Swift code block of README.md, the articles and the doc comments"
run_counted "$LOGS/snippets.log" scripts/check-snippets.sh scripts/check-snippets.sh .build/debug
end_stage "$COUNTED_LINE"

# --- tsan: the Swift tests under ThreadSanitizer ---------------------------------

begin_stage tsan "swift test --sanitize=thread"
# A build folder of its own, so the plain build above stays usable; outside
# the package, where SwiftPM keeps it consistent across runs.
TSAN_BUILD=${TK_TSAN_BUILD:-${TMPDIR:-/tmp}/timerkit-tsan-build}
run_swiftpm --hide-started "$LOGS/swift-test-tsan.log" \
    timeout -k 10 "$TK_TEST_TIMEOUT" swift test --sanitize=thread --scratch-path "$TSAN_BUILD"
[ "$RUN_STATUS" -eq 0 ] || fail "swift test --sanitize=thread failed (status $RUN_STATUS; log: $LOGS/swift-test-tsan.log)"
if grep -q "WARNING: ThreadSanitizer" "$LOGS/swift-test-tsan.log"; then
    fail "ThreadSanitizer reported a data race (log: $LOGS/swift-test-tsan.log)"
fi
end_stage "no data race reported"

# --- timerkit: the command users run ---------------------------------------------

begin_stage timerkit "timerkit clocks (smoke)"
run_swiftpm "$LOGS/timerkit-build.log" swift build -c release --product timerkit
[ "$RUN_STATUS" -eq 0 ] || fail "swift build -c release --product timerkit failed (log: $LOGS/timerkit-build.log)"
run_logged "$LOGS/timerkit-clocks.log" .build/release/timerkit clocks
[ "$RUN_STATUS" -eq 0 ] || fail "timerkit clocks exited with status $RUN_STATUS"
# A command line it cannot use is refused with status 64, a line that says
# why, and the usage.
REFUSED=0
timerkit_refuses() {
    local why=$1 status=0 output
    shift
    output=$(.build/release/timerkit "$@" 2>&1) || status=$?
    if [ "$status" -ne 64 ] || ! grep -Fqx -- "timerkit: $why" <<<"$output" ||
        ! grep -q '^usage: timerkit clocks' <<<"$output"; then
        fail "timerkit $* was not refused with 64, 'timerkit: $why' and the usage (status $status: $output)"
    fi
    PASSED=$((PASSED + 1))
    REFUSED=$((REFUSED + 1))
}
timerkit_refuses "no command given"
timerkit_refuses "unknown command bogus" bogus
# `timerkit help COMMAND` is `timerkit COMMAND --help`; anything else after
# it is refused, not ignored.
timerkit_refuses "unknown command bogus" help bogus
timerkit_refuses "--help takes at most one command" --help fps extra
# An argument that is not UTF-8 text is refused, its stray bytes shown as
# \xHH: read with repairs, a path would name another file.
timerkit_refuses 'argument 3 is not UTF-8 text: /tmp/x\xFF\\\e' demo --state $'/tmp/x\xff\\\e'
timerkit_refuses 'argument 2 is not UTF-8 text: \xE4\xB8' clocks $'\xe4\xb8'
# A subcommand refuses with `timerkit NAME: why` and its own usage.
subcommand_refuses() {
    local why=$1 status=0 output
    shift
    output=$(.build/release/timerkit "$@" 2>&1) || status=$?
    if [ "$status" -ne 64 ] || ! grep -Fqx -- "timerkit $1: $why" <<<"$output" ||
        ! grep -qx "usage: timerkit $1.*" <<<"$output"; then
        fail "timerkit $* was not refused with 64, 'timerkit $1: $why' and its usage (status $status: $output)"
    fi
    PASSED=$((PASSED + 1))
    REFUSED=$((REFUSED + 1))
}
subcommand_refuses "unknown option --json" clocks --json
# Numbers are decimal, as the usages show them: C's other forms (hex,
# exponents, inf, nan), which Double(_:) takes, are refused.
subcommand_refuses "--seconds needs 0.1 to 86400 seconds" fps --seconds 0x10
subcommand_refuses "--rate needs 1 to 1000 frames per second" fps --rate 1e2
subcommand_refuses "--print-after needs a number of seconds, 0 to 86400" demo --print-after inf
subcommand_refuses "unknown option now" clocks now --help
# Whole numbers are digits alone: a sign, which Int(_:) takes, is refused.
subcommand_refuses "--port needs a port number" trusted-time --server localhost --port +123
subcommand_refuses "--samples needs a number in 1...64" trusted-time --server localhost --samples +1
subcommand_refuses "--timeout-ms needs a number of milliseconds, 1 to 60000" \
    trusted-time --server localhost --timeout-ms +100
subcommand_refuses "--seed needs a whole number" fps --seed +5
subcommand_refuses "--sale-seconds needs a whole number of seconds, 0 to 31536000 (a year)" demo --sale-seconds +5
subcommand_refuses "--code-seconds needs a whole number of seconds, 1 to 86400 (a day)" demo --code-seconds +60
# An argument is outside text: shown with its control characters escaped,
# never acted on by the terminal that shows standard error.
subcommand_refuses 'unknown option \e[2J\n' demo $'\e[2J\n'
# trusted-time's three forms (--server, --no-sync, --clocks) do not mix,
# and a timeout out of range is refused rather than clamped.
subcommand_refuses "--clocks takes no other option (got --server)" trusted-time --clocks --server localhost
subcommand_refuses "--clocks takes no other option (got --no-sync)" trusted-time --no-sync --clocks
subcommand_refuses "--no-sync asks no server: --server is refused" trusted-time --no-sync --server localhost
subcommand_refuses "--no-sync asks no server: --timeout-ms is refused" trusted-time --timeout-ms 100 --no-sync
subcommand_refuses "--timeout-ms needs a number of milliseconds, 1 to 60000" \
    trusted-time --server localhost --timeout-ms 9223372036854775807
# prints_usage FIRST_LINE ARGUMENT...: timerkit with these arguments prints a
# usage whose first line is FIRST_LINE, with status 0.
prints_usage() {
    local first=$1 status=0 output
    shift
    output=$(.build/release/timerkit "$@") || status=$?
    [ "$status" -eq 0 ] && [ "$(head -n 1 <<<"$output")" = "$first" ] ||
        fail "timerkit $* did not print the usage '$first...' with status 0 (status $status: $output)"
    PASSED=$((PASSED + 1))
}
prints_usage "usage: timerkit clocks" clocks --help
prints_usage "usage: timerkit clocks" clocks -h
# `timerkit help fps` is `timerkit fps --help`; `help help` the general usage.
FPS_USAGE="usage: timerkit fps [--rate HZ] [--seconds S] [--work-ms X] [--jank P] [--spike-ms Y]"
prints_usage "$FPS_USAGE" help fps
prints_usage "$FPS_USAGE" --help fps
prints_usage "usage: timerkit clocks" --help
# fps's usage gives each option's range, as its refusals do.
FPS_HELP=$(.build/release/timerkit help fps)
for range in "(1 to 1000," "(0.1 to 86400," "(0 to 10000," "(0 to 100,"; do
    grep -Fq -- "$range" <<<"$FPS_HELP" || fail "timerkit help fps does not give the range $range"
    PASSED=$((PASSED + 1))
done
prints_usage "usage: timerkit clocks" help help

# Output that cannot be written (a full disk, a closed descriptor, a pipe
# whose reader left while SIGPIPE is ignored) is said once on standard
# error, with status 1: never a crash, never a silent 0.
TIMERKIT_SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/timerkit-stage.XXXXXX")
# timerkit_write_fails WHY REDIRECTION ARGUMENT...: runs timerkit with its
# standard output redirected (`full`: /dev/full; `closed`: closed).
timerkit_write_fails() {
    local why=$1 redirection=$2 status=0 errors
    shift 2
    case $redirection in
        full) errors=$(.build/release/timerkit "$@" 2>&1 >/dev/full) || status=$? ;;
        closed) errors=$(.build/release/timerkit "$@" 2>&1 >&-) || status=$? ;;
    esac
    [ "$status" -eq 1 ] && [ "$errors" = "timerkit: cannot write the output: $why" ] ||
        fail "timerkit $* with standard output $redirection: not status 1 and one line saying '$why' (status $status: $errors)"
    PASSED=$((PASSED + 1))
}
FULL="No space left on device"
timerkit_write_fails "$FULL" full clocks
timerkit_write_fails "$FULL" full --help
timerkit_write_fails "$FULL" full fps --help
timerkit_write_fails "$FULL" full clocks --help
timerkit_write_fails "$FULL" full fps --seconds 0.3
timerkit_write_fails "$FULL" full fps --seconds 0.3 --json
timerkit_write_fails "$FULL" full demo --print-after 0.2 --state "$TIMERKIT_SCRATCH/demo.state"
timerkit_write_fails "$FULL" full trusted-time --clocks
timerkit_write_fails "$FULL" full trusted-time --no-sync --json
timerkit_write_fails "Bad file descriptor" closed fps --seconds 0.3
timerkit_write_fails "Bad file descriptor" closed clocks
# --json escapes what would act on a terminal or a reader of lines: C0 and
# C1 controls, the line and paragraph separators, the bidirectional controls.
json_status=0
json_output=$(.build/release/timerkit trusted-time --server $'a\u202eb\u2028c\u009bd' --port 9 --samples 1 \
    --timeout-ms 100 --json 2>&1) || json_status=$?
[ "$json_status" -eq 1 ] && grep -Fq '"server": "a\u202eb\u2028c\u009bd"' <<<"$json_output" &&
    ! grep -q $'\u202e\|\u2028\|\u009b' <<<"$json_output" ||
    fail "timerkit trusted-time --json did not escape a server name's controls (status $json_status: $(printf %q "$json_output"))"
PASSED=$((PASSED + 1))
# A reader that leaves after 5 bytes: the live line's next write finds the
# pipe broken, and the run stops there rather than going on for a day (the
# timeout only ends a run that did not stop).
pipe_status=0
bash -c 'trap "" PIPE; timeout -k 10 120 "$0" fps --seconds 86400 2>"$1" | head -c 5 >/dev/null
    exit "${PIPESTATUS[0]}"' .build/release/timerkit "$TIMERKIT_SCRATCH/pipe.err" || pipe_status=$?
[ "$pipe_status" -eq 1 ] && [ "$(cat "$TIMERKIT_SCRATCH/pipe.err")" = "timerkit: cannot write the output: Broken pipe" ] ||
    fail "timerkit fps into a pipe closed early (SIGPIPE ignored): not stopped with status 1 and 'Broken pipe' (status $pipe_status: $(cat "$TIMERKIT_SCRATCH/pipe.err"))"
PASSED=$((PASSED + 1))
# Standard error closed or full: the usage error still ends with 64.
stderr_status=0
.build/release/timerkit fps --rate 0 2>&- || stderr_status=$?
[ "$stderr_status" -eq 64 ] || fail "timerkit fps --rate 0 with standard error closed: status $stderr_status, not 64"
stderr_status=0
.build/release/timerkit bogus 2>/dev/full || stderr_status=$?
[ "$stderr_status" -eq 64 ] || fail "timerkit bogus with standard error full: status $stderr_status, not 64"
stderr_status=0
.build/release/timerkit clocks >/dev/full 2>&- || stderr_status=$?
[ "$stderr_status" -eq 1 ] || fail "timerkit clocks with standard output full and standard error closed: status $stderr_status, not 1"
PASSED=$((PASSED + 3))
# Written to a file, the lines are whole: each ends with a newline.
.build/release/timerkit fps --seconds 1.2 >"$TIMERKIT_SCRATCH/fps.out" ||
    fail "timerkit fps --seconds 1.2 into a file failed"
[ "$(tail -c 1 "$TIMERKIT_SCRATCH/fps.out" | od -An -c | tr -d ' ')" = '\n' ] &&
    grep -q '^fps \.\.\.  measuring the first second at 60\.0 Hz$' "$TIMERKIT_SCRATCH/fps.out" &&
    grep -qE '^done: fps .* over [0-9]+ frames$' "$TIMERKIT_SCRATCH/fps.out" ||
    fail "timerkit fps into a file did not write whole lines: $(cat "$TIMERKIT_SCRATCH/fps.out")"
PASSED=$((PASSED + 1))
rm -rf "$TIMERKIT_SCRATCH"
end_stage "timerkit ran; --help, help fps and clocks --help, $REFUSED bad command lines refused, 12 unwritable outputs reported, standard error closed or full"

# --- peers: the full benchmarks package, kept working -----------------------------

begin_stage peers "Benchmarks/: harness tests, timer-peers (and its charts), timer-cost, frame-peers, countdown-peers, executor-peers and queue-peers --quick, the ordo-one suite's list (smoke)"
run_swiftpm --hide-started "$LOGS/peers-test.log" \
    timeout -k 10 "$TK_TEST_TIMEOUT" swift test --package-path Benchmarks
peers_tests=$(grep -E 'Test run with [0-9]+ tests? .*passed' "$LOGS/peers-test.log" | tail -n 1 |
    sed -E 's/.*Test run with ([0-9]+) tests?.*/\1/' || true)
[ "$RUN_STATUS" -eq 0 ] && [ -n "$peers_tests" ] ||
    fail "swift test --package-path Benchmarks failed (status $RUN_STATUS; log: $LOGS/peers-test.log)"
PASSED=$((PASSED + peers_tests))
run_swiftpm "$LOGS/peers-build.log" swift build -c release --package-path Benchmarks
[ "$RUN_STATUS" -eq 0 ] || fail "swift build -c release --package-path Benchmarks failed (log: $LOGS/peers-build.log)"
CHARTS=build/charts
CHART_FILES=(lateness-cdf.svg cost-vs-pending.svg wakeups-vs-tolerance.svg)
rm -rf "$CHARTS"
run_logged "$LOGS/timer-peers.log" timeout -k 10 "$TK_TEST_TIMEOUT" Benchmarks/.build/release/timer-peers --quick \
    --charts "$CHARTS"
[ "$RUN_STATUS" -eq 0 ] || fail "timer-peers --quick exited with status $RUN_STATUS (log: $LOGS/timer-peers.log)"
grep -qE '^   NIO scheduleTask +[0-9]' "$LOGS/timer-peers.log" ||
    fail "timer-peers --quick printed no NIO row (log: $LOGS/timer-peers.log)"
# Allocations per schedule + invalidate pair once warm (the last column of the
# schedule table): a LoopTimer is one allocation, and the C core allocates
# nothing on that path. Both sizes of the quick run must print the row. The
# count is of the whole process over a 256-pair probe, so 0.02 is allowed for
# stray allocations of other threads; one more per pair would read 1.00 more.
check_mallocs_per_pair() { # side, most allowed
    awk -v side="$1" -v most="$2" '
        index($0, "   " side " ") == 1 && $NF ~ /^[0-9]+\.[0-9]+$/ {
            rows++
            if ($NF + 0 > most + 0) { print "mallocs per pair " $NF " at " $(NF - 9) " pending"; bad = 1 }
        }
        END { if (rows != 2) print "found " rows + 0 " rows, not 2"; exit (bad || rows != 2) }
    ' "$LOGS/timer-peers.log"
}
mallocs_out=$(check_mallocs_per_pair "TimerKit LoopTimer" 1.02) ||
    fail "timer-peers --quick: a LoopTimer must cost at most one allocation per schedule + invalidate: $mallocs_out (log: $LOGS/timer-peers.log)"
mallocs_out=$(check_mallocs_per_pair "C core tk_loop_schedule/cancel" 0.02) ||
    fail "timer-peers --quick: the C core must not allocate per schedule + cancel: $mallocs_out (log: $LOGS/timer-peers.log)"
# The charts must be well-formed XML; without xmllint they cannot be checked,
# which fails the stage (the deps stage installs libxml2-utils).
command -v xmllint >/dev/null 2>&1 ||
    fail "xmllint not found: cannot check the charts in $CHARTS (Debian package libxml2-utils; scripts/test.sh --install-deps)"
for chart in "${CHART_FILES[@]}"; do
    [ -s "$CHARTS/$chart" ] ||
        fail "timer-peers --quick --charts $CHARTS wrote no $chart (log: $LOGS/timer-peers.log)"
    xmllint --noout "$CHARTS/$chart" >"$LOGS/xmllint-$chart.log" 2>&1 ||
        fail "xmllint: $CHARTS/$chart is not well-formed: $(head -n 3 "$LOGS/xmllint-$chart.log")"
done
run_logged "$LOGS/frame-peers.log" timeout -k 10 "$TK_TEST_TIMEOUT" Benchmarks/.build/release/frame-peers --quick
[ "$RUN_STATUS" -eq 0 ] || fail "frame-peers --quick exited with status $RUN_STATUS (log: $LOGS/frame-peers.log)"
for peer in "bare timerfd \(C floor\)" "TimerKit FrameTicker" "Task.sleep\(until:\) loop" "DispatchSourceTimer" "NIO scheduleRepeatedTask"; do
    [ "$(grep -cE "^\| $peer \| [0-9]+ of [0-9]+ \|" "$LOGS/frame-peers.log")" -eq 3 ] ||
        fail "frame-peers --quick printed no row at each rate for $peer (log: $LOGS/frame-peers.log)"
done
run_logged "$LOGS/countdown-peers.log" timeout -k 10 "$TK_TEST_TIMEOUT" Benchmarks/.build/release/countdown-peers --quick
[ "$RUN_STATUS" -eq 0 ] || fail "countdown-peers --quick exited with status $RUN_STATUS (log: $LOGS/countdown-peers.log)"
grep -qE '^one ticker walking all +[0-9]' "$LOGS/countdown-peers.log" ||
    fail "countdown-peers --quick printed no row for the walking ticker (log: $LOGS/countdown-peers.log)"
run_logged "$LOGS/timer-cost.log" timeout -k 10 "$TK_TEST_TIMEOUT" Benchmarks/.build/release/timer-cost --quick
[ "$RUN_STATUS" -eq 0 ] || fail "timer-cost --quick exited with status $RUN_STATUS (log: $LOGS/timer-cost.log)"
# Five sides at two sizes (TimerKit's LoopTimer, the C core, the C core with
# each handle in a Swift object and in a malloc'd block, and TimerKit's
# TimerCallbacks), then what the LoopTimer adds to the Swift object at each
# size.
[ "$(grep -cE '^(TimerKit LoopTimer|C core tk_loop_schedule/cancel|C core \+ Swift object per timer|C core \+ 136 B box per timer|TimerKit TimerCallbacks) +[0-9]+ +[0-9]+ +[0-9]+ ' "$LOGS/timer-cost.log")" -eq 10 ] ||
    fail "timer-cost --quick printed no row for each side and size (log: $LOGS/timer-cost.log)"
[ "$(grep -cE '^ +[0-9]+ pending: +pair [0-9.]+x \([+-][0-9]+ ns\), churn [0-9.]+x \([+-][0-9]+ ns\)$' "$LOGS/timer-cost.log")" -eq 2 ] ||
    fail "timer-cost --quick did not compare TimerKit with the Swift object at each size (log: $LOGS/timer-cost.log)"
# Its verdicts on the LoopTimer's cost targets: the pair ratio is judged at
# the sizes --quick measures (with the spread of the rep-by-rep ratios), the
# two targets at 100k and 1M pending are said not to be judged.
grep -qE '^  pair <= 2\.0x the C core.s at each size: [0-9.]+x \[[0-9.]+-[0-9.]+\] at 1000, [0-9.]+x \[[0-9.]+-[0-9.]+\] at 10000; the highest [0-9.]+x -> (MET|NOT MET)$' "$LOGS/timer-cost.log" &&
    [ "$(grep -cE '^  (pair <= 120 ns at 100000|churn <= 1\.5x the C core.s at 1000000) pending: -> not judged \(measured at 1000, 10000 pending only\)$' "$LOGS/timer-cost.log")" -eq 2 ] ||
    fail "timer-cost --quick did not judge its cost targets (log: $LOGS/timer-cost.log)"
# Several runs, each a process of its own: the first run's table, a line a
# run, and the targets judged on the median of the runs. A bad count is refused.
run_logged "$LOGS/timer-cost-runs.log" timeout -k 10 "$TK_TEST_TIMEOUT" Benchmarks/.build/release/timer-cost --quick --runs 2 --seed 5
[ "$RUN_STATUS" -eq 0 ] || fail "timer-cost --quick --runs 2 exited with status $RUN_STATUS (log: $LOGS/timer-cost-runs.log)"
[ "$(grep -cE '^  seed [56]: pair/C [0-9.]+x, [0-9.]+x; pair at 100000 -; churn/C at 1000000 -$' "$LOGS/timer-cost-runs.log")" -eq 2 ] &&
    [ "$(grep -c '^TimerKit LoopTimer ' "$LOGS/timer-cost-runs.log")" -eq 2 ] &&
    [ "$(grep -A3 '^Targets over the 2 runs ' "$LOGS/timer-cost-runs.log" |
        grep -cE "^  (pair <= 2\.0x the C core.s at each size: [0-9.]+x \[[0-9.]+-[0-9.]+\] at 1000, [0-9.]+x \[[0-9.]+-[0-9.]+\] at 10000; each run.s highest [0-9.]+x \[[0-9.]+-[0-9.]+\] -> (MET|NOT MET)|(pair <= 120 ns at 100000|churn <= 1\.5x the C core.s at 1000000) pending: -> not judged \(measured at 1000, 10000 pending only\))$")" -eq 3 ] ||
    fail "timer-cost --runs 2 did not report each run and judge the targets over both (log: $LOGS/timer-cost-runs.log)"
# Bad numbers are refused before anything is measured: out of range, or not
# written in digits alone (as the usages show a number), and a TK_SEED that
# is not a whole number rather than a seed of the tool's own choosing.
for bad in "timer-cost --runs 0|--runs needs a number from 1 to 20" \
    "timer-cost --runs +2|--runs needs a number from 1 to 20" \
    "timer-cost --seed +5|--seed needs a number" \
    "countdown-peers --seed +5|--seed needs a number" \
    "queue-peers --seed -5|--seed needs a number" \
    "timer-peers --seed +5|--seed needs a number"; do
    command=${bad%%|*}
    run_logged "$LOGS/bench-bad-number.log" Benchmarks/.build/release/$command
    [ "$RUN_STATUS" -eq 64 ] && grep -q -- "${bad#*|}" "$LOGS/bench-bad-number.log" ||
        fail "$command was not refused with status 64 and \"${bad#*|}\" (log: $LOGS/bench-bad-number.log)"
done
for tool in countdown-peers timer-peers; do
    run_logged "$LOGS/bench-bad-seed.log" env TK_SEED=+5 Benchmarks/.build/release/$tool --quick
    [ "$RUN_STATUS" -eq 64 ] && grep -q "TK_SEED needs a whole number" "$LOGS/bench-bad-seed.log" ||
        fail "$tool with TK_SEED=+5 was not refused with status 64 (log: $LOGS/bench-bad-seed.log)"
done
run_logged "$LOGS/executor-peers.log" timeout -k 10 "$TK_TEST_TIMEOUT" Benchmarks/.build/release/executor-peers --quick
[ "$RUN_STATUS" -eq 0 ] || fail "executor-peers --quick exited with status $RUN_STATUS (log: $LOGS/executor-peers.log)"
for side in "actor on a TimerLoop" "default actor, Task.sleep"; do
    grep -qE "^$side.* +[0-9]+ +[0-9.]+ " "$LOGS/executor-peers.log" ||
        fail "executor-peers --quick printed no row for $side (log: $LOGS/executor-peers.log)"
done
run_logged "$LOGS/queue-peers.log" timeout -k 10 "$TK_TEST_TIMEOUT" Benchmarks/.build/release/queue-peers --quick
[ "$RUN_STATUS" -eq 0 ] || fail "queue-peers --quick exited with status $RUN_STATUS (log: $LOGS/queue-peers.log)"
[ "$(grep -cE '^(QueueTimer|DispatchSourceTimer) +[0-9]' "$LOGS/queue-peers.log")" -eq 4 ] ||
    fail "queue-peers --quick printed no lateness and coalescing row for each side (log: $LOGS/queue-peers.log)"
[ "$(grep -cE '^[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+x' "$LOGS/queue-peers.log")" -eq 2 ] ||
    fail "queue-peers --quick printed no create + cancel row for each size (log: $LOGS/queue-peers.log)"
run_swiftpm "$LOGS/benchmark-list.log" swift package --package-path Benchmarks benchmark list
[ "$RUN_STATUS" -eq 0 ] || fail "swift package benchmark list failed (log: $LOGS/benchmark-list.log)"
listed=$(grep -cE '^(Churn|Pair|Memory|Lateness|Coalescing|Clock)/' "$LOGS/benchmark-list.log" || true)
[ "$listed" -gt 0 ] || fail "swift package benchmark list named no benchmark (log: $LOGS/benchmark-list.log)"
end_stage "timer-peers (${#CHART_FILES[@]} charts well-formed), timer-cost, frame-peers, countdown-peers, executor-peers and queue-peers ran; $listed benchmarks listed"

# --- the test scripts: trusted time, and the terminal programs ---------------------

# test_script_stage STAGE SCRIPT DESCRIPTION: runs SCRIPT against the release
# timerkit as stage STAGE, adding its `N passed, N failed` line to the
# totals; the stage fails if the script fails or prints no such line.
test_script_stage() {
    begin_stage "$1" "$3"
    run_counted "$LOGS/$1.log" "$2" env TK_TIMERKIT=.build/release/timerkit timeout -k 10 "$TK_TEST_TIMEOUT" "$2"
    end_stage "$COUNTED_LINE"
}

test_script_stage trusted scripts/test-trusted-time.sh \
    "trusted time: chrony on loopback, the probe under faketime -1h"
test_script_stage demo scripts/test-demo.sh \
    "timerkit demo in tmux: keys in, screens asserted; the wall clock stepped under libfaketime"
test_script_stage fps scripts/test-fps.sh \
    "timerkit fps in tmux (a line updated in place) and --json (summaries checked)"

print_summary
echo "$PASSED passed, $FAILED failed"
