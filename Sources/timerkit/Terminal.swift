import Foundation
import Synchronization
import TimerKit

/// The terminal of an interactive command, with ANSI escapes only (no
/// curses). It puts back what it changed on `close`, and on the other ways
/// out that a program can see: the signals that end the process (`SIGINT`,
/// `SIGTERM`, `SIGHUP`, `SIGQUIT`; not one the process was started ignoring)
/// restore the terminal before it ends (but `SIGINT` while a command
/// watches for Ctrl-C with an `Interrupt`: that command finishes early and
/// closes the terminal itself), and a stop (`SIGTSTP`) restores it
/// for the shell, then applies the command's settings again when the
/// process goes on (as `SIGCONT` does after any stop, since the shell may
/// have reset them meanwhile). A crash or `SIGKILL` leaves it as it is.
///
/// A screen (``Mode/screen``, `timerkit demo`) takes raw keys in (one at a
/// time, unechoed, Ctrl-C included, never blocking) and draws whole screens
/// out, with the cursor hidden. A status line (``Mode/statusLine``,
/// `timerkit fps`) only rewrites one line in place. Both cut a line wider
/// than the window at its edge, to the window's width (read for each line
/// drawn, so a resize counts), and turn off the terminal's line wrap as
/// well, so that a line never takes more rows.
///
/// A screen stops itself only on `SIGTSTP` (Ctrl-Z). Its settings are
/// applied only while its process group is the terminal's foreground
/// group, and put back only if they were applied (in the background, all
/// but the modes, which are the shell's by then), so that in the
/// background (after `bg`, or going on after a stop, as a shell's `kill %1`
/// makes a stopped job do) it leaves the terminal as the shell has it.
/// There it draws nothing and reads no keys (``isShown``), while its timers
/// run on; back in the foreground (`fg`, which sends no `SIGCONT` to a job
/// that is running) it applies its settings again by itself, at the next
/// ``draw(_:)`` or ``keys()``. `SIGTTOU` and `SIGTTIN` are blocked while it
/// is open, in the thread that opened it and in the handlers, so that no
/// use of the terminal from the background stops the process, and a stop
/// for Ctrl-Z gives way to a signal that ends the process, come meanwhile:
/// such a signal finishes. ``isOrphanedInBackground`` says when nothing is
/// likely to bring it back. A status line applies and puts back its
/// escapes wherever the process is, as it writes its line (its handlers
/// block `SIGTTOU` and `SIGTTIN` too).
final class Terminal {
    enum Mode {
        /// Raw keys in, whole screens out: standard input and output must be a terminal.
        case screen
        /// One line rewritten in place on standard output.
        case statusLine
    }

    let mode: Mode
    private var isOpen = false
    /// The signal mask before `open` blocked `SIGTTOU` and `SIGTTIN` (a
    /// screen), put back by `close`.
    private var previousMask = sigset_t()
    /// The process's parent when the screen opened: the shell (or other
    /// program) that started it, and that can bring it back to the
    /// foreground.
    private var parent: pid_t = 0

    init(_ mode: Mode) {
        self.mode = mode
    }

    /// Whether `TERM` says the terminal is a dumb one, which takes no
    /// escapes: it cannot place the cursor, hide it or stop the wrap. A
    /// command then draws no screen and rewrites no line.
    static var isDumb: Bool {
        guard let term = getenv("TERM") else { return false }
        return String(cString: term) == "dumb"
    }

    /// Applies the mode's settings (a screen: only if its process group is
    /// the terminal's foreground group; see the type's notes) and installs
    /// the signal handlers that put them back.
    ///
    /// - Throws: the failed call: `isatty` with `ENOTTY` when standard
    ///   output is not a terminal, `tcgetattr` when standard input is not
    ///   (for a screen).
    func open() throws(SystemError) {
        precondition(!isOpen && !TerminalSettings.installed, "one open terminal per process")
        guard isatty(1) == 1 else { throw SystemError(errno: Errno(rawValue: ENOTTY), function: "isatty") }
        var settings = TerminalSettings(raw: mode == .screen)
        if settings.raw {
            _ = try SystemError.posix(tcgetattr(0, &settings.saved), "tcgetattr")
            settings.savedFlags = try SystemError.posix(fcntl(0, F_GETFL), "fcntl")
            settings.rawSettings = settings.saved
            settings.rawSettings.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG)
            settings.rawSettings.c_iflag &= ~tcflag_t(IXON | ICRNL)
            // Blocked in this thread and those it starts from now on; the
            // handlers block them too, on whichever thread they run.
            var stops = TerminalSettings.terminalStops
            pthread_sigmask(SIG_BLOCK, &stops, &previousMask)
            parent = getppid()
        }
        TerminalSettings.current = settings
        // Installed first: a signal from here on finds what to put back.
        TerminalSettings.installHandlers()
        isOpen = true
        if let failed = TerminalSettings.fromMainThread({ TerminalSettings.apply(again: false) }) {
            let error = SystemError(errno: Errno(rawValue: errno), function: "\(failed)")
            close()
            throw error
        }
    }

    /// Puts the signals' handlers back as they were, then the terminal (a
    /// screen: if it applied its settings, as far as it can from where it
    /// is), then the signal mask.
    func close() {
        guard isOpen else { return }
        isOpen = false
        // From here a handler that runs only puts the terminal back.
        TerminalSettings.closing.store(true, ordering: .sequentiallyConsistent)
        // With the handled signals blocked until the terminal is back: one
        // that came between the handlers' removal and the restore would
        // end the process with its settings still on.
        TerminalSettings.fromMainThread {
            TerminalSettings.removeHandlers()
            TerminalSettings.restore(fromSignal: false)
        }
        if mode == .screen { pthread_sigmask(SIG_SETMASK, &previousMask, nil) }
    }

    /// Whether a screen is on the terminal now, with its settings applied:
    /// if it is not, but its process group has become the terminal's
    /// foreground group (`fg`), its settings are applied now; if it is,
    /// but its group is in the background (stopped by a signal it cannot
    /// catch, then `bg`), the terminal is left to the shell. Always true
    /// for a status line. ``draw(_:)`` and ``keys()`` do nothing while it
    /// is false.
    var isShown: Bool {
        guard isOpen, mode == .screen else { return isOpen }
        let state = TerminalSettings.state.load(ordering: .sequentiallyConsistent)
        if state == TerminalSettings.applied && TerminalSettings.inForeground() { return true }
        // Another thread is changing the settings: the next call sees them.
        guard state != TerminalSettings.changing else { return false }
        _ = TerminalSettings.fromMainThread { TerminalSettings.apply(again: false) }
        return TerminalSettings.state.load(ordering: .sequentiallyConsistent) == TerminalSettings.applied
    }

    /// Whether a screen is in the background with its parent (the shell
    /// that started it, as a rule) gone since it opened, so that no `fg`
    /// is likely to come. The command should quit then, rather than run on
    /// unseen. Only the parent is looked at: a demo started by a script
    /// whose shell has gone, the script still running, is not seen as
    /// orphaned. (A stopped process group that loses its shell so is
    /// orphaned: the kernel sends it `SIGHUP` and `SIGCONT`, and drops the
    /// stops of `SIGTSTP`, `SIGTTIN` and `SIGTTOU` from then on.) False
    /// while the terminal cannot say which group is in the foreground (see
    /// ``isShown``).
    var isOrphanedInBackground: Bool {
        isOpen && mode == .screen && !TerminalSettings.inForeground() && getppid() != parent
    }

    /// The keys typed since the last call (none if nothing was typed, or
    /// the screen is not shown). It never waits, even if something cleared
    /// the descriptor's non-blocking flag: it reads only what `poll` says is
    /// there.
    func keys() -> [UInt8] {
        guard isShown else { return [] }
        var keys: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            var ready = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 0) == 1, ready.revents & Int16(POLLIN) != 0 else { break }
            let got = Foundation.read(0, &buffer, buffer.count)
            if got <= 0 { break }  // EAGAIN: nothing more for now; 0: end of input; EIO: background
            keys += buffer[0..<got]
        }
        return keys
    }

    /// Draws `lines` as the whole screen, from the top left corner, each
    /// line at its own row, so that the screen never scrolls. The rows go
    /// from the last up: a window with fewer rows puts every line past its
    /// bottom on its last row, where the last line that fits comes after
    /// them, so it shows the first lines. The cursor is left on the last
    /// line's row. Nothing is drawn while the screen is not shown.
    func draw(_ lines: [String]) {
        guard isShown else { return }
        let width = Self.width()
        var text = "\u{1B}[\(lines.count + 1);1H\u{1B}[J"  // below the screen
        for (row, line) in lines.enumerated().reversed() {
            let (cut, fillsRow) = Self.cut(line, to: width)
            // The rest of the row cleared, unless the line reaches its last
            // column: the cursor stays there, and the clear would take it.
            text += "\u{1B}[\(row + 1);1H" + cut + (fillsRow ? "" : "\u{1B}[K")
        }
        write(text + "\u{1B}[\(max(lines.count, 1));1H")
    }

    /// Rewrites the status line: the cursor's row, from its first column.
    func showStatus(_ line: String) {
        write("\r\u{1B}[K" + Self.cut(line, to: Self.width()).text)
    }

    /// The window's width in columns; nil if the terminal does not say.
    private static func width() -> Int? {
        var size = winsize()
        let result = withUnsafeMutablePointer(to: &size) { ioctl(1, UInt(TIOCGWINSZ), $0) }
        return result == 0 && size.ws_col > 0 ? Int(size.ws_col) : nil
    }

    /// `line` cut to its first `width` columns (all of it without a
    /// width), keeping every escape sequence (`ESC [ ... final`), so that a
    /// style the line turns off is still turned off; and whether the line
    /// reaches the last column. Each character counts the columns a
    /// terminal gives it (``columns(of:)``), and the cut never splits one:
    /// a wide character that would take the last column and one past it is
    /// left out, with all that follows, so that the row ends a column short
    /// rather than run over; combining marks (zero columns) stay with the
    /// character before them. A character with such marks is not put in the
    /// last column either, as terminals differ in the cell its marks join
    /// there (with line wrap off, tmux puts them on the one before).
    ///
    /// The line's own text is printable: outside text in it went through
    /// ``printable(_:)``, so that every `ESC` in it starts one of the
    /// line's own sequences.
    static func cut(_ line: String, to width: Int?) -> (text: String, fillsRow: Bool) {
        guard let width else { return (line, false) }
        let scalars = Array(line.unicodeScalars)
        var text = String.UnicodeScalarView()
        var shown = 0
        var full = false
        var inEscape = false
        var afterEscape = false
        for (index, scalar) in scalars.enumerated() {
            if afterEscape {
                afterEscape = false
                inEscape = scalar == "["
                text.append(scalar)
            } else if inEscape {
                // Parameters and intermediates up to a final byte, @ to ~.
                inEscape = !(0x40...0x7E).contains(scalar.value)
                text.append(scalar)
            } else if scalar == "\u{1B}" {
                afterEscape = true
                text.append(scalar)
            } else if !full {
                let columns = columns(of: scalar)
                let next = index + 1 < scalars.count ? scalars[index + 1] : nil
                if shown + columns > width
                    || (columns > 0 && shown + columns == width
                        && next.map { $0 != "\u{1B}" && Self.columns(of: $0) == 0 } == true)
                {
                    full = true
                } else {
                    shown += columns
                    text.append(scalar)
                }
            }
        }
        return (String(text), shown >= width)
    }

    /// The columns `scalar` takes on a terminal, as the C library's
    /// `wcwidth` counts them in a UTF-8 locale (tmux, and the terminals
    /// that use it, count so): 2 for the East Asian wide and fullwidth
    /// characters (CJK ideographs and punctuation, kana, Hangul syllables,
    /// fullwidth forms) and the emoji shown as pictures; 0 for combining
    /// marks, format characters (a zero-width space or joiner) and the
    /// Hangul vowels and finals that join a syllable, and for a control
    /// character, which shows nothing of its own; 1 for the rest.
    ///
    /// From a table and the scalar's Unicode properties rather than from
    /// `wcwidth` itself, which depends on the process's locale: it answers
    /// -1 for every non-ASCII character in the "C" locale a program starts
    /// in, and a static build may have no locale data to switch to. The
    /// table follows glibc 2.36 (Unicode 14): it agrees with its `wcwidth`
    /// in C.UTF-8 on every character glibc knows, but for U+1171E (0 there).
    /// Characters assigned since take their width from Swift's newer
    /// Unicode properties, where an older terminal may count otherwise.
    static func columns(of scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if (0x20..<0x7F).contains(value) { return 1 }
        switch scalar.properties.generalCategory {
        case .control, .nonspacingMark, .enclosingMark:
            return 0
        case .format where !shownFormatCharacters.contains(value):
            return 0
        default:
            break
        }
        if zeroWidth.contains(where: { $0.contains(value) }) { return 0 }
        // Regional indicators (flags' halves) are emoji but one column each.
        if scalar.properties.isEmojiPresentation && !(0x1F1E6...0x1F1FF).contains(value) { return 2 }
        return wide.contains(where: { $0.contains(value) }) ? 2 : 1
    }

    /// The format characters that show, one column each: the soft hyphen
    /// and the prepended concatenation marks (Arabic, Syriac, Kaithi).
    private static let shownFormatCharacters: Set<UInt32> = [
        0xAD, 0x600, 0x601, 0x602, 0x603, 0x604, 0x605, 0x6DD, 0x70F, 0x890, 0x891, 0x8E2, 0x110BD, 0x110CD,
    ]
    /// The Hangul jamo vowels and finals, which join the syllable before.
    private static let zeroWidth: [ClosedRange<UInt32>] = [0x1160...0x11FF, 0xD7B0...0xD7FF]
    /// East Asian wide and fullwidth characters, beyond the emoji: Hangul
    /// initials; angle brackets; CJK radicals, symbols and punctuation,
    /// kana, bopomofo, enclosed CJK, ideographs and Yi; Hangul syllables;
    /// compatibility ideographs; vertical, small and fullwidth forms;
    /// Tangut, Khitan, Nushu and kana supplements; enclosed ideographs; the
    /// supplementary ideographic planes.
    private static let wide: [ClosedRange<UInt32>] = [
        0x1100...0x115F, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0xA4CF, 0xA960...0xA97F,
        0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60,
        0xFFE0...0xFFE6, 0x16FE0...0x16FE4, 0x16FF0...0x16FF1, 0x17000...0x18CFF, 0x18D00...0x18D08,
        0x1AFF0...0x1B2FF, 0x1F200...0x1F202, 0x1F210...0x1F23B, 0x1F240...0x1F248, 0x1F250...0x1F251,
        0x1F260...0x1F265, 0x20000...0x2FFFD, 0x30000...0x3FFFD,
    ]

    private func write(_ text: String) {
        Output.write(text)
    }
}

/// What the signal handlers put back and apply again. Plain C values, set
/// before the handlers are installed: a handler reads nothing else, and
/// calls only functions that are safe in a signal handler (`tcsetattr`,
/// `fcntl`, `write`, `sigaction`, `signal`, `sigprocmask`, `sigpending`,
/// `sigismember`, `raise`, `tcgetpgrp`, `getpgrp`, `nanosleep`) and
/// lock-free atomics.
private struct TerminalSettings {
    /// Whether standard input's settings were changed (a screen).
    var raw: Bool
    var saved = termios()
    var rawSettings = termios()
    var savedFlags: Int32 = 0

    static var current: TerminalSettings {
        get { stored.pointee.current }
        set { stored.pointee.current = newValue }
    }
    nonisolated(unsafe) static var installed = false
    /// The handler's action (every handled signal blocked while it runs, so
    /// that the handlers never interleave on a thread, and the
    /// ``terminalStopSignals`` too), and each signal's action before, put back by
    /// `removeHandlers`; nil for a signal left alone because the process
    /// was started ignoring it (as a shell starts a background job ignoring
    /// SIGINT and SIGQUIT, and nohup SIGHUP).
    static var handlerAction: sigaction {
        get { stored.pointee.handlerAction }
        set { stored.pointee.handlerAction = newValue }
    }
    nonisolated(unsafe) static var previousActions: [sigaction?] = []

    /// `current` and `handlerAction`, kept on the heap, in memory of their
    /// types' whole size (set up by `open`, before any handler reads it). A
    /// global of a C struct with padding (`termios`, `sigaction`) that
    /// Swift 6.3 initializes statically is laid out without the padding, a
    /// few bytes short: storing a whole value there wrote over the next
    /// global.
    private struct Stored {
        var current = TerminalSettings(raw: false)
        var handlerAction = sigaction()
    }
    nonisolated(unsafe) private static let stored: UnsafeMutablePointer<Stored> = {
        let pointer = UnsafeMutablePointer<Stored>.allocate(capacity: 1)
        pointer.initialize(to: Stored())
        return pointer
    }()
    /// Set by `close`, and by a handler on its way to ending the process,
    /// before anything else: from then on the settings are only put back,
    /// never applied again. (A lock-free atomic: safe to read in a handler,
    /// on any thread.)
    static let closing = Atomic<Bool>(false)

    /// Whether the settings are applied (a lock-free atomic, as `closing`):
    /// ``released``, ``applied`` (also when applying them failed: the
    /// terminal is the process's all the same), or ``changing`` while one
    /// thread applies or puts them back (the others wait for it, but for
    /// `Terminal.isShown`, which leaves it be till the next call). The main
    /// thread changes them with the handled signals blocked
    /// (``fromMainThread(_:)``), and a handler runs with them blocked, so
    /// that a thread never waits for a change it interrupted.
    static let state = Atomic<Int>(released)
    static let released = 0
    static let applied = 1
    static let changing = 2

    /// The signals that end the process, then the stop and the going on.
    static let endingSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]
    static let handledSignals = endingSignals + [SIGTSTP, SIGCONT]
    /// The signals that stop a process in the background that uses its
    /// terminal, blocked while a screen is open: then `tcsetattr` and
    /// `write` go through there, and `read` fails with `EIO`.
    static let terminalStopSignals = [SIGTTOU, SIGTTIN]
    static var terminalStops: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in terminalStopSignals { sigaddset(&set, signal) }
        return set
    }

    /// Hides the cursor (a screen), turns line wrap off, clears a screen.
    static let screenEscapes: StaticString = "\u{1B}[?25l\u{1B}[?7l\u{1B}[2J"
    static let lineEscapes: StaticString = "\u{1B}[?7l"
    /// Shows the cursor and turns line wrap back on (a screen).
    static let screenRestoreEscapes: StaticString = "\u{1B}[?25h\u{1B}[?7h"
    static let lineRestoreEscapes: StaticString = "\u{1B}[?7h"
    /// Ends the line the cursor is on (a screen, or a status line cut
    /// short), for the shell's prompt.
    static let lineEnd: StaticString = "\n"

    static func installHandlers() {
        closing.store(false, ordering: .sequentiallyConsistent)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handleSignal
        sigemptyset(&action.sa_mask)
        for signal in handledSignals { sigaddset(&action.sa_mask, signal) }
        // A status line's handlers too: under `stty tostop`, its escapes
        // written from the background would stop it, SIGTERM held.
        for signal in terminalStopSignals { sigaddset(&action.sa_mask, signal) }
        action.sa_flags = SA_RESTART
        handlerAction = action
        previousActions = handledSignals.map { signal in
            var previous = sigaction()
            guard sigaction(signal, nil, &previous) == 0, !previous.ignoresSignal else { return nil }
            sigaction(signal, &handlerAction, nil)
            return previous
        }
        installed = true
    }

    static func removeHandlers() {
        for (signal, previous) in zip(handledSignals, previousActions) {
            guard var previous else { continue }
            sigaction(signal, &previous, nil)
        }
        previousActions = []
        installed = false
    }


    /// Runs `body` on the calling thread (the demo's main thread, its only
    /// one) with the handled signals blocked, so that no handler interrupts
    /// it there (one that runs meanwhile on another thread waits for its
    /// change of ``state``).
    static func fromMainThread<T>(_ body: () -> T) -> T {
        var handled = handlerAction.sa_mask
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &handled, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        return body()
    }

    /// Whether the process is in its terminal's foreground process group,
    /// where a screen may apply its settings and draw. True for a status
    /// line, and when the terminal cannot say: the descriptor is not the
    /// process's controlling terminal (no job control, then), or the
    /// terminal is gone (a write then fails, and says so).
    static func inForeground() -> Bool {
        guard current.raw else { return true }
        let foreground = tcgetpgrp(0)
        return foreground < 0 || foreground == getpgrp()
    }

    /// Takes ``state`` for a change, waiting while another thread changes
    /// it; returns what it was, ``released`` or ``applied``.
    private static func claim() -> Int {
        while true {
            let now = state.load(ordering: .sequentiallyConsistent)
            if now != changing {
                let taken = state.compareExchange(expected: now, desired: changing, ordering: .sequentiallyConsistent)
                if taken.exchanged { return now }
            } else {
                var pause = timespec(tv_sec: 0, tv_nsec: 1_000_000)
                nanosleep(&pause, nil)
            }
        }
    }

    /// Brings the settings in line with where the process is (not once
    /// closing): in the foreground, applies them if they are not applied,
    /// or if `again` (the shell may have reset them during a stop); in the
    /// background, lets go of them if they were applied. Returns the call
    /// that failed, its error in `errno`; nil if none did.
    @discardableResult
    static func apply(again: Bool) -> StaticString? {
        let was = claim()
        var now = was
        var failed: StaticString?
        // After the claim: an ending handler sets `closing` before it reads
        // the state, so either it waits for this change, or this sees it.
        if closing.load(ordering: .sequentiallyConsistent) {
        } else if inForeground() {
            if was == released || again {
                // Taken even if the terminal refuses them (gone, with SIGHUP
                // ignored): it is drawn on, and a write that fails says so.
                failed = applySettings()
                now = applied
            }
        } else if was == applied {
            putBack(inForeground: false)
            now = released
        }
        state.store(now, ordering: .sequentiallyConsistent)
        return failed
    }

    private static func applySettings() -> StaticString? {
        if current.raw {
            guard tcsetattr(0, TCSANOW, &current.rawSettings) == 0 else { return "tcsetattr" }
            guard fcntl(0, F_SETFL, current.savedFlags | O_NONBLOCK) != -1 else {
                let error = errno
                _ = tcsetattr(0, TCSANOW, &current.saved)
                errno = error
                return "fcntl"
            }
        }
        write(current.raw ? screenEscapes : lineEscapes)
        return nil
    }

    /// The settings as they were before the command changed them, if it
    /// did and has not put them back yet. On the way out from a signal, a
    /// status line is ended too, for the shell's prompt.
    static func restore(fromSignal: Bool) {
        let was = claim()
        if was == applied || !current.raw {
            putBack(inForeground: inForeground(), fromSignal: fromSignal)
        }
        state.store(released, ordering: .sequentiallyConsistent)
    }

    /// Puts the settings back. A screen in the background puts back the
    /// descriptor's flags (which the shell shares), the cursor and the line
    /// wrap, but not the modes, which are the shell's by then, nor a line
    /// end on the shell's screen.
    private static func putBack(inForeground: Bool, fromSignal: Bool = false) {
        if current.raw {
            _ = fcntl(0, F_SETFL, current.savedFlags)
            if inForeground { _ = tcsetattr(0, TCSANOW, &current.saved) }
            write(screenRestoreEscapes)
            if inForeground { write(lineEnd) }
        } else {
            write(lineRestoreEscapes)
            if fromSignal { write(lineEnd) }
        }
    }

    private static func write(_ text: StaticString) {
        _ = Glibc.write(1, text.utf8Start, text.utf8CodeUnitCount)
    }
}

extension sigaction {
    /// Whether the action is to ignore the signal (`SIG_IGN`), as a shell
    /// starts a background job with `SIGINT` and `SIGQUIT`, and nohup
    /// `SIGHUP`.
    var ignoresSignal: Bool {
        guard let handler = __sigaction_handler.sa_handler else { return false }  // SIG_DFL
        return unsafeBitCast(handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
    }
}

/// The handler of every signal in `TerminalSettings.handledSignals`.
private func handleSignal(_ number: Int32) {
    let savedErrno = errno
    defer { errno = savedErrno }
    switch number {
    case SIGCONT:
        // The shell may have reset the terminal while the process was
        // stopped, or kept it, the process going on in the background.
        TerminalSettings.apply(again: true)
    case SIGTSTP:
        // On the way out already: a stop now would hold up the end.
        guard !TerminalSettings.closing.load(ordering: .sequentiallyConsistent) else { return }
        TerminalSettings.restore(fromSignal: true)
        // A signal that ends the process, come while this ran (blocked
        // here), ends it once this returns, the terminal put back: no stop
        // first, which would hold it until a SIGCONT. (The `endingSignals`
        // named one by one: a handler reads no Swift array.)
        var pending = sigset_t()
        sigpending(&pending)
        if sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1
            || sigismember(&pending, SIGHUP) == 1 || sigismember(&pending, SIGQUIT) == 1
        {
            return
        }
        // Stop as the default action would: SIGTSTP is blocked while this
        // runs, so it is let through for the raise.
        signal(SIGTSTP, SIG_DFL)
        var stop = sigset_t()
        sigemptyset(&stop)
        sigaddset(&stop, SIGTSTP)
        sigprocmask(SIG_UNBLOCK, &stop, nil)
        raise(SIGTSTP)
        // Going on: after SIGCONT, or at once where the kernel drops the
        // stop (a process group that no shell controls). Applied here too,
        // as SIGCONT's handler may have run before the stop took effect.
        sigprocmask(SIG_BLOCK, &stop, nil)
        if !TerminalSettings.closing.load(ordering: .sequentiallyConsistent) {
            sigaction(SIGTSTP, &TerminalSettings.handlerAction, nil)
            TerminalSettings.apply(again: true)
        }
    default:
        // Ctrl-C while a command watches for it (`Interrupt`): the command
        // finishes early, then closes the terminal itself.
        if number == SIGINT && Interrupt.deliver() { return }
        // Ends the process as the default action would, with the terminal
        // as it was: the signal, blocked while this runs, comes again once
        // this returns.
        TerminalSettings.closing.store(true, ordering: .sequentiallyConsistent)
        TerminalSettings.restore(fromSignal: true)
        signal(number, SIG_DFL)
        raise(number)
    }
}
