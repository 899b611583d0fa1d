import Foundation
import TimerKit

/// The terminal of an interactive command, with ANSI escapes only (no
/// curses). It puts back what it changed on `close`, and on every other way
/// out: the signals that end the process (`SIGINT`, `SIGTERM`, `SIGHUP`,
/// `SIGQUIT`) restore the terminal before it ends, and a stop (`SIGTSTP`)
/// restores it for the shell, then applies the command's settings again
/// when the process goes on (as `SIGCONT` does after any stop, since the
/// shell may have reset them meanwhile).
///
/// A screen (``Mode/screen``, `timerkit demo`) takes raw keys in (one at a
/// time, unechoed, Ctrl-C included, never blocking) and draws whole screens
/// out, with the cursor hidden. A status line (``Mode/statusLine``,
/// `timerkit fps`) only rewrites one line in place. Both turn off the
/// terminal's line wrap, so that a line wider than the window is cut at
/// its edge instead of taking more rows.
final class Terminal {
    enum Mode {
        /// Raw keys in, whole screens out: standard input and output must be a terminal.
        case screen
        /// One line rewritten in place on standard output.
        case statusLine
    }

    let mode: Mode
    private var isOpen = false

    init(_ mode: Mode) {
        self.mode = mode
    }

    /// Applies the mode's settings and installs the signal handlers that
    /// put them back.
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
        }
        TerminalSettings.current = settings
        // Installed first: a signal from here on finds what to put back.
        TerminalSettings.installHandlers()
        isOpen = true
        if settings.raw {
            do throws(SystemError) {
                _ = try SystemError.posix(tcsetattr(0, TCSANOW, &settings.rawSettings), "tcsetattr")
                _ = try SystemError.posix(fcntl(0, F_SETFL, settings.savedFlags | O_NONBLOCK), "fcntl")
            } catch {
                close()
                throw error
            }
        }
        TerminalSettings.applyEscapes()
    }

    /// Puts the terminal back as it was, and the signals' handlers too.
    func close() {
        guard isOpen else { return }
        isOpen = false
        TerminalSettings.restore(fromSignal: false)
        TerminalSettings.removeHandlers()
    }

    /// The keys typed since the last call (none if nothing was typed). It
    /// never waits, even if something cleared the descriptor's non-blocking
    /// flag: it reads only what `poll` says is there.
    func keys() -> [UInt8] {
        var keys: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            var ready = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 0) == 1, ready.revents & Int16(POLLIN) != 0 else { break }
            let got = Foundation.read(0, &buffer, buffer.count)
            if got <= 0 { break }  // EAGAIN: nothing more for now; 0: end of input
            keys += buffer[0..<got]
        }
        return keys
    }

    /// Draws `lines` as the whole screen, from the top left corner: each
    /// line at its own row, so that a window with fewer rows shows the
    /// first ones and never scrolls.
    func draw(_ lines: [String]) {
        var text = ""
        for (row, line) in lines.enumerated() {
            text += "\u{1B}[\(row + 1);1H" + line + "\u{1B}[K"
        }
        write(text + "\u{1B}[J")
    }

    /// Rewrites the status line: the cursor's row, from its first column.
    func showStatus(_ line: String) {
        write("\r\u{1B}[K" + line)
    }

    private func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}

/// What the signal handlers put back and apply again. Plain C values, set
/// before the handlers are installed: a handler reads nothing else, and
/// calls only functions that are safe in a signal handler (`tcsetattr`,
/// `fcntl`, `write`, `signal`, `raise`, `sigprocmask`).
private struct TerminalSettings {
    /// Whether standard input's settings were changed (a screen).
    var raw: Bool
    var saved = termios()
    var rawSettings = termios()
    var savedFlags: Int32 = 0

    nonisolated(unsafe) static var current = TerminalSettings(raw: false)
    nonisolated(unsafe) static var installed = false
    nonisolated(unsafe) static var previousHandlers: [sighandler_t?] = []

    /// The signals that end the process, then the stop and the going on.
    static let endingSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]
    static let handledSignals = endingSignals + [SIGTSTP, SIGCONT]

    /// Hides the cursor (a screen), turns line wrap off, clears a screen.
    static let screenEscapes: StaticString = "\u{1B}[?25l\u{1B}[?7l\u{1B}[2J"
    static let lineEscapes: StaticString = "\u{1B}[?7l"
    /// Shows the cursor (a screen), turns line wrap back on, and ends the
    /// line the cursor is on (a screen, or a status line cut short).
    static let screenRestoreEscapes: StaticString = "\u{1B}[?25h\u{1B}[?7h\n"
    static let lineRestoreEscapes: StaticString = "\u{1B}[?7h"
    static let lineEnd: StaticString = "\n"

    static func installHandlers() {
        previousHandlers = handledSignals.map { signal($0, handleSignal) }
        installed = true
    }

    static func removeHandlers() {
        for (signal, previous) in zip(handledSignals, previousHandlers) { Glibc.signal(signal, previous) }
        previousHandlers = []
        installed = false
    }

    /// The mode's settings, again after a stop.
    static func applyAgain() {
        if current.raw {
            _ = tcsetattr(0, TCSANOW, &current.rawSettings)
            _ = fcntl(0, F_SETFL, current.savedFlags | O_NONBLOCK)
        }
        applyEscapes()
    }

    static func applyEscapes() {
        write(current.raw ? screenEscapes : lineEscapes)
    }

    /// The settings as they were before the command changed them. On the
    /// way out from a signal, a status line is ended too, for the shell's
    /// prompt.
    static func restore(fromSignal: Bool) {
        if current.raw {
            _ = fcntl(0, F_SETFL, current.savedFlags)
            _ = tcsetattr(0, TCSANOW, &current.saved)
            write(screenRestoreEscapes)
        } else {
            write(lineRestoreEscapes)
            if fromSignal { write(lineEnd) }
        }
    }

    private static func write(_ text: StaticString) {
        _ = Glibc.write(1, text.utf8Start, text.utf8CodeUnitCount)
    }
}

/// The handler of every signal in `TerminalSettings.handledSignals`.
private func handleSignal(_ number: Int32) {
    let savedErrno = errno
    defer { errno = savedErrno }
    switch number {
    case SIGCONT:
        // The shell may have reset the terminal while the process was stopped.
        TerminalSettings.applyAgain()
    case SIGTSTP:
        TerminalSettings.restore(fromSignal: true)
        // Stop as the default action would: SIGTSTP is blocked while this
        // runs, so it is let through for the raise.
        signal(SIGTSTP, SIG_DFL)
        var stop = sigset_t()
        sigemptyset(&stop)
        sigaddset(&stop, SIGTSTP)
        sigprocmask(SIG_UNBLOCK, &stop, nil)
        raise(SIGTSTP)
        // Going on (after SIGCONT, whose handler applied the settings).
        sigprocmask(SIG_BLOCK, &stop, nil)
        signal(SIGTSTP, handleSignal)
    default:
        // Ends the process as the default action would, with the terminal
        // as it was: the signal, blocked while this runs, comes again once
        // this returns.
        TerminalSettings.restore(fromSignal: true)
        signal(number, SIG_DFL)
        raise(number)
    }
}
