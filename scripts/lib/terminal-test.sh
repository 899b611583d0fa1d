# The harness of the terminal-program tests (scripts/test-demo.sh,
# scripts/test-fps.sh): pass/fail bookkeeping, the Debian packages they
# need, the timerkit binary, and a tmux window to drive a program in as a
# person would: `send-keys` in, `capture-pane` out.
#
# It builds on scripts/lib/test-harness.sh (pass, fail, check, abort).
# A script sets TEST_NAME (used in log lines and tmux socket names) and
# TEST_PACKAGES (Debian packages it needs, e.g. "tmux faketime"), then
# sources this file. Sourcing installs what is missing, builds timerkit
# (unless TK_TIMERKIT names a binary), and sets TIMERKIT and WORK (a
# scratch directory removed on exit).

WORK=""
SOCKETS=0
SOCKET=""

log() { echo "$TEST_NAME: $*"; }
# shellcheck source=scripts/lib/test-harness.sh
. scripts/lib/test-harness.sh

cleanup() {
    local n
    for n in $(seq 1 "$SOCKETS"); do tmux -L "timerkit-$TEST_NAME-$$-$n" kill-server 2>/dev/null || true; done
    if [ -n "$WORK" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- packages -----------------------------------------------------------------

install_packages() {
    local missing=() package
    for package in $TEST_PACKAGES; do
        package_installed "$package" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null 2>&1 || { log "not Debian: install ${missing[*]} by hand"; return 1; }
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || { log "need root to install ${missing[*]}"; return 1; }
        sudo=(sudo)
    fi
    log "installing ${missing[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends "${missing[@]}"
}

install_packages || abort "$TEST_PACKAGES installed"
command -v tmux >/dev/null 2>&1 || abort "tmux found"
log "$(tmux -V)"

if [ -n "${TK_TIMERKIT:-}" ]; then
    TIMERKIT=$TK_TIMERKIT
else
    log "swift build --product timerkit"
    swift build --product timerkit >/dev/null || abort "timerkit builds"
    TIMERKIT="$(swift build --show-bin-path)/timerkit"
fi
[ -x "$TIMERKIT" ] || abort "timerkit binary at $TIMERKIT"
TIMERKIT=$(cd "$(dirname "$TIMERKIT")" && pwd)/$(basename "$TIMERKIT")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/timerkit-$TEST_NAME.XXXXXX")

# --- the terminal -----------------------------------------------------------------

# start ARGUMENT...: runs the command in a fresh 120x30 tmux window named
# `term`, on a tmux server of its own (the previous one is stopped); when it
# exits, the window prints `program exited with N` and stays.
start() { start_sized 120 30 "$@"; }

# start_sized COLUMNS ROWS ARGUMENT...: `start` in a window of that size.
start_sized() {
    local columns=$1 rows=$2 command
    shift 2
    command=$(printf '%q ' "$@")
    new_window "$columns" "$rows" "$command; echo \"program exited with \$?\"; sleep 3600"
}

# start_shell COLUMNS ROWS: an interactive bash (job control: Ctrl-Z, fg)
# in the window, its prompt `PROMPT> `; type commands with `keys`.
start_shell() {
    new_window "$1" "$2" "env PS1='PROMPT> ' bash --norc --noprofile -i"
}

new_window() {
    [ -z "$SOCKET" ] || tmux -L "$SOCKET" kill-server 2>/dev/null || true
    SOCKETS=$((SOCKETS + 1))
    SOCKET="timerkit-$TEST_NAME-$$-$SOCKETS"
    tmux -L "$SOCKET" -f /dev/null new-session -d -s term -x "$1" -y "$2" "$3"
}

# pane_flags: `cursor=C wrap=W`, 1 when the cursor is shown and when lines
# wrap at the window's edge, as the program left them.
pane_flags() { tmux -L "$SOCKET" display -p -t term 'cursor=#{cursor_flag} wrap=#{wrap_flag}'; }

# tty_modes: the window's terminal modes that raw mode turns off, as stty
# shows them (`icanon echo isig` in a shell's cooked mode).
tty_modes() {
    stty -F "$(tmux -L "$SOCKET" display -p -t term '#{pane_tty}')" -a | tr ' ;' '\n\n' |
        grep -xE -- '-?(icanon|echo|isig)' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//'
}

# program_pid PATTERN: the pid of the process whose command line starts
# with PATTERN (the tmux server's holds it too, but not at its start).
program_pid() { pgrep -f "^$1" | head -n 1; }

# wait_gone PID: waits up to 5 s for process PID to end (a zombie, which its
# shell has not reaped yet, counts). Fails if it has not; its last state
# letter (T: stopped) is then in $STATE.
STATE=""
wait_gone() {
    for _ in $(seq 1 50); do
        STATE=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null || true)
        [ -z "$STATE" ] || [ "$STATE" = Z ] && return 0
        sleep 0.1
    done
    return 1
}

screen() { tmux -L "$SOCKET" capture-pane -p -t term; }
# The screen with each line the terminal wrapped joined into one, as it was
# written: what a line says, whatever the window's width makes of it.
screen_joined() { tmux -L "$SOCKET" capture-pane -p -J -t term; }

keys() { tmux -L "$SOCKET" send-keys -t term "$@"; }

# wait_for REGEX [SECONDS]: polls the screen until a line matches (default
# limit 30 s). Succeeds with the matching line in $LINE. (With SCREEN set
# to screen_joined, a wrapped line is matched whole: wait_for_joined.)
LINE=""
wait_for() {
    local regex=$1 limit=${2:-30} waited=0
    while [ "$waited" -lt $((limit * 10)) ]; do
        LINE=$("${SCREEN:-screen}" | grep -E -m 1 -- "$regex" || true)
        [ -n "$LINE" ] && return 0
        sleep 0.1
        waited=$((waited + 1))
    done
    log "timed out waiting for /$regex/; the screen:"
    screen | sed 's/^/    | /'
    return 1
}

# wait_for_joined REGEX [SECONDS]: wait_for a line as it was written, the
# rows the terminal wrapped it into joined.
wait_for_joined() { SCREEN=screen_joined wait_for "$@"; }

# wait_for_text TEXT [SECONDS]: wait_for a line holding TEXT as it is.
wait_for_text() {
    wait_for "$(printf '%s' "$1" | sed 's/[][\\.*^$+?(){}|]/\\&/g')" "${2:-30}"
}

# field REGEX: the first number captured by REGEX's group on the screen now.
# (The sed delimiter is a control character, so REGEX may hold / and |.)
field() {
    local d=$'\001'
    screen | sed -n -E "s${d}$1${d}\\1${d}p" | head -n 1
}

