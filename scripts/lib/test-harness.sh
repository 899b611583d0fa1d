# The bookkeeping of the scripts/test-*.sh programs: each check prints
# `ok` or `FAIL` with its name, and the script ends with `N passed, N
# failed`. A script sets `log` (its name before each message) and sources
# this file.

PASSED=0
FAILED=0

pass() {
    PASSED=$((PASSED + 1))
    echo "ok    $1"
}

fail() {
    FAILED=$((FAILED + 1))
    echo "FAIL  $1"
}

# check NAME COMMAND...: passes if the command succeeds.
check() {
    local name=$1
    shift
    if "$@"; then pass "$name"; else fail "$name"; fi
}

# Gives up: one more failure, the summary, a non-zero exit.
abort() {
    fail "$1"
    echo "$PASSED passed, $FAILED failed"
    exit 1
}

# Whether the Debian package $1 is installed.
package_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}
