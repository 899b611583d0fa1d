#!/usr/bin/env bash
# Compiles each Tests/MisuseTests/*.swift against the built TimerKit module and
# checks that it is refused with the error its first line names, or, for
# `// expect: compiles`, that it compiles: the data races and clock mix-ups
# that the API must not let through, and what it must still allow.
#
#   scripts/check-misuse.sh [BUILD_DIR]    BUILD_DIR defaults to .build/debug
#
# Needs `swift build` first. Compiles to SIL (-emit-sil), since Swift 6's
# data-race checks of values sent between tasks run there, not in the type
# checker. Prints one line per file and ends with `N passed, N failed`.

set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v swiftc >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swiftc ]; then
    PATH="/opt/swift/usr/bin:$PATH"
fi

BUILD=${1:-.build/debug}
MODULES=$BUILD/Modules
if [ ! -f "$MODULES/TimerKit.swiftmodule" ]; then
    echo "check-misuse: $MODULES/TimerKit.swiftmodule not found: run swift build first" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

passed=0
failed=0
shopt -s nullglob
files=(Tests/MisuseTests/*.swift)
if [ ${#files[@]} -eq 0 ]; then
    echo "check-misuse: no Tests/MisuseTests/*.swift" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
for file in "${files[@]}"; do
    expect=$(head -n 1 "$file")
    output=$(swiftc -emit-sil -o /dev/null -swift-version 6 -I "$MODULES" -I include "$file" 2>&1)
    status=$?
    case "$expect" in
    "// expect: compiles")
        if [ "$status" -eq 0 ]; then
            echo "ok    $file compiles"
            passed=$((passed + 1))
        else
            echo "FAIL  $file should compile:"
            echo "$output" | grep -E 'error:' | head -n 5
            failed=$((failed + 1))
        fi
        ;;
    "// expect: error: "*)
        wanted=${expect#// expect: error: }
        if [ "$status" -ne 0 ] && grep -qF -- "$wanted" <<<"$output"; then
            echo "ok    $file is refused: $wanted"
            passed=$((passed + 1))
        else
            echo "FAIL  $file should be refused with: $wanted"
            if [ "$status" -eq 0 ]; then
                echo "      it compiled"
            else
                echo "$output" | grep -E 'error:' | head -n 5
            fi
            failed=$((failed + 1))
        fi
        ;;
    *)
        echo "FAIL  $file: the first line must be '// expect: compiles' or '// expect: error: TEXT'"
        failed=$((failed + 1))
        ;;
    esac
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
