# The C side of the release builds of scripts/run.sh and scripts/soak.sh.
# Sourced from the package root by a script that sets `log` (its name, for
# messages); sets CC (unless set: the Swift toolchain's clang, else any clang,
# else gcc), CORE (the core's sources, checked to exist) and FLAGS (-O2 and
# warnings as errors), and makes build/release/.

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
[ ${#CORE[@]} -gt 0 ] || { echo "$log: no sources in Sources/CTimerCore" >&2; exit 1; }

FLAGS=(-std=c11 -Wall -Wextra -Wpedantic -Werror -O2 -DNDEBUG -D_GNU_SOURCE -Iinclude -ISources/CTimerCore
    -ITests/CTimerCoreTests)
mkdir -p build/release
