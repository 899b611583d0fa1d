# Running a SwiftPM command (swift build, swift test, swift package) and
# running it again when the SwiftPM tool itself crashed. The toolchain's
# swift-package can die of a SIGSEGV in its own libdispatch (in `swift
# package benchmark list`, say, after a successful build). That is
# a fault of the toolchain, not of this package's code, and a second run of
# the same command does not meet it. A crash of anything the tool starts (a
# test program, a benchmark, a compiler) is not the tool's own crash: its
# report names that program, and the command is not run again.
#
# Sourced by scripts/test.sh and scripts/run.sh; checked by
# scripts/check-swiftpm-crash.sh.

# The SwiftPM programs whose own crashes are run again.
SWIFTPM_TOOLS='swift-(package|build|test|run)'

# The Swift runtime's backtracer settings for the commands run here (and
# for the check's own crashes): on, whatever the environment says, every
# image listed (by default only those in a printed frame, which a crash on
# a thread that never reached the tool's code would leave out), no colours,
# and never waiting for a debugger.
SWIFTPM_BACKTRACE='enable=yes,images=all,color=no,interactive=no'

# Each crash that was run again, a line each: the command, its status and
# where the crashed run's output is kept.
SWIFTPM_CRASHES=()

# swiftpm_tool_crashed LOG: true if LOG holds a crash report of a SwiftPM
# tool (the Swift runtime's backtracer: "*** Program crashed: ...", its
# threads, then "Images (...):", a line per image ending with the image's
# path, the tool's own executable among them), and nothing that a run of the
# same command again could hide: no other program's crash report (a test
# program's or a benchmark's lists that program and no SwiftPM tool, since
# the report is written by the process that crashed), and no failed test
# (Swift Testing's "... failed after", XCTest's "with N failures", N > 0).
swiftpm_tool_crashed() {
    awk -v tools="/bin/$SWIFTPM_TOOLS\$" '
        function end_report() { if (report && !tool) other = 1 }
        /Program crashed: / { end_report(); report = 1; images = 0; tool = 0; next }
        / failed after [0-9]/ || /with [1-9][0-9]* failures?/ { failed = 1 }
        report && /^Images( \(.*\))?:$/ { images = 1; next }
        images && /^Backtrace took / { images = 0; next }
        images && $NF ~ tools { tool = 1 }
        END { end_report(); exit !(report && tool && !other && !failed) }
    ' "$1"
}

# swiftpm_run [--hide-started] LOG COMMAND...: runs COMMAND (with the
# backtracer set as SWIFTPM_BACKTRACE says) with its output shown and
# written to LOG, and sets SWIFTPM_STATUS to its exit status. If it died of
# a signal and swiftpm_tool_crashed says LOG holds the tool's own crash, the
# crashed run's output is kept as LOG.crash-N, a line is added to
# SWIFTPM_CRASHES, and the command runs again: three runs at most, the last
# one's status is the one set. --hide-started leaves Swift Testing's
# "started" lines (those beginning with "◇ ") out of what is shown; LOG keeps
# them.
swiftpm_run() {
    # A pipeline's status is its first command's failure, whatever the caller set.
    local -
    set -o pipefail
    # What is shown: every line, or all but the started lines.
    local shown='' log run
    if [ "$1" = --hide-started ]; then
        shown='/^◇ /d'
        shift
    fi
    log=$1
    shift
    for run in 1 2 3; do
        if env SWIFT_BACKTRACE="$SWIFTPM_BACKTRACE" "$@" 2>&1 | tee "$log" | sed -u "$shown"; then
            SWIFTPM_STATUS=0
        else
            SWIFTPM_STATUS=${PIPESTATUS[0]}
        fi
        if [ "$SWIFTPM_STATUS" -le 128 ] || [ "$run" -eq 3 ] || ! swiftpm_tool_crashed "$log"; then
            return 0
        fi
        cp "$log" "$log.crash-$run"
        SWIFTPM_CRASHES+=("$* crashed in the SwiftPM tool's own code (status $SWIFTPM_STATUS; output kept in $log.crash-$run) and was run again")
        echo "--- the SwiftPM tool crashed in its own code (status $SWIFTPM_STATUS), not in this package's: running the command again (run $((run + 1)) of 3 at most)"
    done
}

# swiftpm_print_crashes PREFIX: a line for each crash that was run again,
# PREFIX before it.
swiftpm_print_crashes() {
    local crash
    for crash in "${SWIFTPM_CRASHES[@]+"${SWIFTPM_CRASHES[@]}"}"; do
        echo "$1$crash"
    done
}
