# Running a SwiftPM command (swift build, swift test, swift package) and
# running it again when the SwiftPM tool itself crashed. The toolchain's
# swift-package now and then dies of a SIGSEGV in its own libdispatch
# (seen in `swift package benchmark list` after a successful build). That is
# a fault of the toolchain, not of this package's code, and a second run of
# the same command does not meet it. A crash of anything the tool starts (a
# test program, a benchmark, a compiler) is not the tool's own crash: its
# report names that program, and the command is not run again.
#
# Sourced by scripts/test.sh and scripts/run.sh; checked by
# scripts/check-swiftpm-crash.sh.

# The SwiftPM programs whose own crashes are run again.
SWIFTPM_TOOLS='swift-(package|build|test|run)'

# Each crash that was run again, a line each: the command, its status and
# where the crashed run's output is kept.
SWIFTPM_CRASHES=()

# swiftpm_tool_crashed LOG: true if the last crash report in LOG (the Swift
# runtime's backtracer: "*** Program crashed: ...", its threads, then
# "Images (...):", a line per image ending with the image's path) is that of
# a SwiftPM tool: its images list the tool's own executable. A crashed test
# program's or benchmark's report lists that program's executable and no
# SwiftPM tool, since the report is written by the process that crashed.
swiftpm_tool_crashed() {
    awk -v tools="/bin/$SWIFTPM_TOOLS\$" '
        /Program crashed: / { report = 1; images = 0; tool = 0; next }
        report && /^Images( \(.*\))?:$/ { images = 1; next }
        images && /^Backtrace took / { images = 0; next }
        images && $NF ~ tools { tool = 1 }
        END { exit !(report && tool) }
    ' "$1"
}

# swiftpm_run [--hide-started] LOG COMMAND...: runs COMMAND with its output
# shown and written to LOG, and sets SWIFTPM_STATUS to its exit status. If
# it died of a signal and LOG holds a SwiftPM tool's own crash report, the
# crashed run's output is kept as LOG.crash-N, a line is added to
# SWIFTPM_CRASHES, and the command runs again: three runs at most, the last
# one's status is the one set. --hide-started leaves Swift Testing's
# "started" lines (those beginning with "◇ ") out of what is shown; LOG keeps
# them.
swiftpm_run() {
    local hide=0 log run
    if [ "$1" = --hide-started ]; then
        hide=1
        shift
    fi
    log=$1
    shift
    for run in 1 2 3; do
        if [ "$hide" -eq 1 ]; then
            if "$@" 2>&1 | tee "$log" | sed -u '/^◇ /d'; then
                SWIFTPM_STATUS=0
            else
                SWIFTPM_STATUS=${PIPESTATUS[0]}
            fi
        else
            if "$@" 2>&1 | tee "$log"; then
                SWIFTPM_STATUS=0
            else
                SWIFTPM_STATUS=${PIPESTATUS[0]}
            fi
        fi
        if [ "$SWIFTPM_STATUS" -le 128 ] || [ "$run" -eq 3 ] || ! swiftpm_tool_crashed "$log"; then
            return 0
        fi
        cp "$log" "$log.crash-$run"
        SWIFTPM_CRASHES+=("$* crashed in the SwiftPM tool's own code (status $SWIFTPM_STATUS; output kept in $log.crash-$run) and was run again")
        echo "--- the SwiftPM tool crashed in its own code (status $SWIFTPM_STATUS), not in this package's: running the command again (run $((run + 1)) of 3 at most)"
    done
}
