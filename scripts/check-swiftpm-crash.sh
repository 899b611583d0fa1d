#!/usr/bin/env bash
# Checks scripts/lib/swiftpm-crash.sh, the harness that runs a SwiftPM
# command again when the SwiftPM tool itself crashed, with real crash
# reports: a small Swift program that dereferences a bad pointer, built once
# under a SwiftPM tool's name (bin/swift-package) and once under a test
# program's (bin/TimerKitPackageTests.xctest). Each check prints `ok` or
# `FAIL`; the last line is `N passed, N failed`.
#
#   scripts/check-swiftpm-crash.sh
#
# Needs swiftc (the Swift toolchain).

set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

log=check-swiftpm-crash
# shellcheck source=scripts/lib/test-harness.sh
. scripts/lib/test-harness.sh
# shellcheck source=scripts/lib/swiftpm-crash.sh
. scripts/lib/swiftpm-crash.sh

if ! command -v swiftc >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swiftc ]; then
    PATH="/opt/swift/usr/bin:$PATH"
fi
command -v swiftc >/dev/null 2>&1 || abort "swiftc found (the Swift toolchain)"
# The crashes run here directly report as those run by swiftpm_run do.
export SWIFT_BACKTRACE=$SWIFTPM_BACKTRACE

WORK=$(mktemp -d "${TMPDIR:-/tmp}/check-swiftpm-crash.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/bin"

# The program: `crasher MARKER` crashes unless MARKER exists, creating it
# first (so it crashes once, then prints "listed"); `crasher -` always
# crashes; `crasher --thread` crashes on a thread that runs libc's strlen
# from its start, no frame of the program's own on it; `crasher --started`
# prints a Swift Testing "started" line and a result line; `crasher
# --failed` a failed test's line, then crashes.
cat >"$WORK/crasher.swift" <<'EOF'
#if canImport(Glibc)
import Glibc
#endif

typealias Start = @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?

let arguments = CommandLine.arguments
let marker = arguments.count > 1 ? arguments[1] : "-"
if marker == "--started" {
    print("◇ Test started.")
    print("✔ Test passed.")
} else if marker == "--thread" {
    var thread = pthread_t()
    let strlen = unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "strlen"), to: Start.self)
    pthread_create(&thread, nil, strlen, nil)
    pthread_join(thread, nil)
} else if marker == "--failed" {
    print("✘ Test \"a check\" failed after 0.001 seconds with 1 issue.")
    fflush(stdout)
    let bad = UnsafeMutablePointer<Int>(bitPattern: 8)!
    bad.pointee = 1
} else if marker != "-" && access(marker, F_OK) == 0 {
    print("listed")
} else {
    if marker != "-" { fclose(fopen(marker, "w")) }
    let bad = UnsafeMutablePointer<Int>(bitPattern: 8)!
    bad.pointee = 1
}
EOF
swiftc "$WORK/crasher.swift" -o "$WORK/bin/swift-package" >"$WORK/swiftc.log" 2>&1 ||
    abort "the crashing program builds: $(cat "$WORK/swiftc.log")"
cp "$WORK/bin/swift-package" "$WORK/bin/TimerKitPackageTests.xctest"
TOOL=$WORK/bin/swift-package
TEST_PROGRAM=$WORK/bin/TimerKitPackageTests.xctest

# --- telling a tool's crash from another program's -------------------------------

"$TOOL" - >"$WORK/tool.log" 2>&1
status=$?
check "a crashing program dies of a signal (status $status)" [ "$status" -gt 128 ]
check "its log holds the runtime's crash report" grep -q 'Program crashed: ' "$WORK/tool.log"
check "a crash of bin/swift-package is a SwiftPM tool's crash" swiftpm_tool_crashed "$WORK/tool.log"

"$TEST_PROGRAM" - >"$WORK/test-program.log" 2>&1
check "a crash of a test program is not a SwiftPM tool's crash" \
    eval '! swiftpm_tool_crashed "$WORK/test-program.log"'

"$TEST_PROGRAM" --started >"$WORK/clean.log" 2>&1
check "a log with no crash report is not a crash" eval '! swiftpm_tool_crashed "$WORK/clean.log"'

cat "$WORK/tool.log" "$WORK/test-program.log" >"$WORK/tool-then-test.log"
check "the tool's crash, then a test program's, is not the tool's crash alone" \
    eval '! swiftpm_tool_crashed "$WORK/tool-then-test.log"'
cat "$WORK/test-program.log" "$WORK/tool.log" >"$WORK/test-then-tool.log"
check "a test program's crash, then the tool's, is not the tool's crash alone" \
    eval '! swiftpm_tool_crashed "$WORK/test-then-tool.log"'
cat "$WORK/tool.log" "$WORK/tool.log" >"$WORK/tool-twice.log"
check "two crash reports of the tool are the tool's crash" swiftpm_tool_crashed "$WORK/tool-twice.log"

"$TOOL" --failed >"$WORK/failed-then-tool.log" 2>&1
check "a failed test, then the tool's crash, is not the tool's crash alone" \
    eval 'grep -q "Program crashed: " "$WORK/failed-then-tool.log" && ! swiftpm_tool_crashed "$WORK/failed-then-tool.log"'
printf 'Executed 3 tests, with 1 failure (0 unexpected) in 0.1 seconds\n' | cat - "$WORK/tool.log" >"$WORK/xctest-failed-then-tool.log"
check "an XCTest failure, then the tool's crash, is not the tool's crash alone" \
    eval '! swiftpm_tool_crashed "$WORK/xctest-failed-then-tool.log"'

"$TOOL" --thread >"$WORK/thread.log" 2>&1
check "a crash on a thread with no frame of the tool's own is the tool's crash" \
    eval 'grep -q "Program crashed: " "$WORK/thread.log" && swiftpm_tool_crashed "$WORK/thread.log"'

# --- running the command again ------------------------------------------------------

SWIFTPM_CRASHES=()
swiftpm_run "$WORK/once.log" "$TOOL" "$WORK/once.marker" >"$WORK/once.out" 2>&1
check "a tool that crashes once is run again and succeeds (status $SWIFTPM_STATUS)" \
    [ "$SWIFTPM_STATUS" -eq 0 ]
check "the log is the second run's" grep -qx listed "$WORK/once.log"
check "the crashed run's output is kept" grep -q 'Program crashed: ' "$WORK/once.log.crash-1"
check "the crash is recorded, a line" [ "${#SWIFTPM_CRASHES[@]}" -eq 1 ]
check "the record names the command and where its output is" \
    grep -qF "$TOOL $WORK/once.marker crashed in the SwiftPM tool's own code (status $(sed -n 's/^--- the SwiftPM tool crashed in its own code (status \([0-9]*\)).*/\1/p' "$WORK/once.out"); output kept in $WORK/once.log.crash-1) and was run again" \
    <(printf '%s\n' "${SWIFTPM_CRASHES[@]}")
check "what is shown says the command runs again" \
    grep -q '^--- the SwiftPM tool crashed in its own code (status [0-9]*), not in this package.s: running the command again (run 2 of 3 at most)$' "$WORK/once.out"

SWIFTPM_CRASHES=()
SWIFT_BACKTRACE=enable=no swiftpm_run "$WORK/no-backtrace.log" "$TOOL" "$WORK/no-backtrace.marker" >/dev/null 2>&1
check "with the backtracer off in the environment, a tool that crashes once is still run again" \
    eval '[ "$SWIFTPM_STATUS" -eq 0 ] && [ "${#SWIFTPM_CRASHES[@]}" -eq 1 ]'

SWIFTPM_CRASHES=()
(set +o pipefail; swiftpm_run "$WORK/no-pipefail.log" "$TOOL" - >/dev/null 2>&1; echo "$SWIFTPM_STATUS") >"$WORK/no-pipefail.status"
check "without pipefail in the caller, a crash's status is kept ($(cat "$WORK/no-pipefail.status"))" \
    test "$(cat "$WORK/no-pipefail.status")" -gt 128

SWIFTPM_CRASHES=()
swiftpm_run "$WORK/always.log" "$TOOL" - >"$WORK/always.out" 2>&1
check "a tool that always crashes runs three times, then its status is kept (status $SWIFTPM_STATUS)" \
    [ "$SWIFTPM_STATUS" -gt 128 ]
check "three runs: two kept crashes and the last log" \
    eval '[ "${#SWIFTPM_CRASHES[@]}" -eq 2 ] && [ -f "$WORK/always.log.crash-2" ] && [ ! -e "$WORK/always.log.crash-3" ] && grep -q "Program crashed: " "$WORK/always.log"'

SWIFTPM_CRASHES=()
swiftpm_run "$WORK/test-program-run.log" "$TEST_PROGRAM" "$WORK/test-program.marker" >/dev/null 2>&1
check "a crashing test program is not run again (status $SWIFTPM_STATUS)" \
    eval '[ "$SWIFTPM_STATUS" -gt 128 ] && [ "${#SWIFTPM_CRASHES[@]}" -eq 0 ] && [ ! -e "$WORK/test-program-run.log.crash-1" ]'

SWIFTPM_CRASHES=()
swiftpm_run "$WORK/fails.log" bash -c 'cat "$1"; exit 1' - "$WORK/tool.log" >/dev/null 2>&1
check "a command that fails with a status of its own is not run again, even with a tool's crash report in its output" \
    eval '[ "$SWIFTPM_STATUS" -eq 1 ] && [ "${#SWIFTPM_CRASHES[@]}" -eq 0 ]'

swiftpm_run "$WORK/passes.log" bash -c 'exit 0' >/dev/null 2>&1
check "a command that succeeds sets status 0" [ "$SWIFTPM_STATUS" -eq 0 ]

swiftpm_run --hide-started "$WORK/started.log" "$TEST_PROGRAM" --started >"$WORK/started.out" 2>&1
check "--hide-started leaves the started lines out of what is shown" \
    eval '! grep -q "^◇ " "$WORK/started.out" && grep -q "^✔ Test passed" "$WORK/started.out"'
check "--hide-started keeps them in the log" grep -q '^◇ Test started' "$WORK/started.log"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
