import Countdowns
import Foundation
import TimerKit

/// `timerkit demo`: a shop's countdown screens in a terminal, on one TimerLoop.
///
///   - a flash sale counting down from a server's "remaining seconds" on the
///     boot clock (the wall clock cannot move it), which reloads at zero;
///   - a carousel in the common modes that keeps turning while a simulated
///     drag runs the loop in `.tracking`, beside a badge timer in `.default`
///     that waits, and fires once with its skipped count when the drag ends;
///   - a verification-code cooldown saved to a file, so that quitting and
///     starting again shows the true time left (a file it cannot restore is
///     left as it is, never saved over, and said at exit with status 1);
///   - the screen's own frame rate: a 30 Hz FrameTicker redraws it, and a
///     FrameRateMonitor reads its fps, p99 frame time, drops and hitches.
///
/// Keys: `q` quits, `d` starts or ends the drag, `s` sends a code; Ctrl-C
/// quits and Ctrl-Z stops, as in any terminal program. In the background
/// (after `bg`) it runs on unseen until `fg`; left there by a shell that is
/// gone (``Terminal/isOrphanedInBackground``), it quits with status 1.
/// `--print-after SECONDS` runs without a terminal for that long and prints
/// the screen once, plain (for scripts, and for running under faketime).
enum DemoCommand: Subcommand {
    static let name = "demo"

    static let usage = """
        usage: timerkit demo [--state FILE] [--sale-seconds N] [--code-seconds N] [--print-after S]

          A terminal screen of countdowns on one TimerLoop: a flash sale, a carousel that
          keeps turning during a drag (tracking mode) beside a badge that waits (default
          mode), and a verification-code cooldown that survives a restart.
          Keys: q (or Ctrl-C) quits, d starts or ends the drag, s sends a code; Ctrl-Z
          stops it. After bg it runs on without drawing or reading keys, the terminal left
          to the shell, until fg; left in the background once the shell that started it is
          gone, it quits, saying so (status 1).
            --state FILE     where the cooldown is saved (default: $TMPDIR/timerkit-demo.state,
                             with /tmp when TMPDIR is unset, empty or not UTF-8 text);
                             a save that fails is shown, and said again at exit (status 1);
                             a file that cannot be restored (corrupt, unreadable) is left as
                             it is, never saved over: a code sent then is not saved, and the
                             failure is said again at exit (status 1); of two demos running
                             at once on one file, each saves its own cooldown and the file
                             keeps the last one saved: give each a file of its own; a save
                             puts a new file at FILE: a symbolic link there is replaced,
                             and the file it led to is left as it was
            --sale-seconds N the server's "remaining seconds" for the sale, 0 to 31536000
                             (a year; default 120)
            --code-seconds N how long a sent code blocks the next, 1 to 86400 (a day;
                             default 60)
            --print-after S  no terminal: run S seconds (0 to 86400), print the screen
                             once, exit (also the way on a dumb terminal, TERM=dumb,
                             which cannot draw the screen)

        """

    struct Options {
        var statePath = Options.temporaryDirectory + "/timerkit-demo.state"
        var saleSeconds: Int64 = 120
        var codeSeconds: Int64 = 60
        var printAfter: Double?

        /// `$TMPDIR`, or /tmp when it is unset, empty or not UTF-8 text (a
        /// repaired path would name another directory).
        static var temporaryDirectory: String {
            guard let bytes = getenv("TMPDIR"), let directory = String(validatingCString: bytes),
                !directory.isEmpty
            else { return "/tmp" }
            return directory
        }
    }

    static func run(_ arguments: ArraySlice<String>) -> Int32 {
        var options = Options()
        var rest = arguments
        while let argument = rest.popFirst() {
            switch argument {
            case "--state":
                guard let value = rest.popFirst(), !value.isEmpty else { return usageError("--state needs a file") }
                options.statePath = value
            case "--sale-seconds":
                guard let value = rest.popFirst(), let seconds = wholeNumber(value).flatMap(Int64.init(exactly:)), (0...31_536_000).contains(seconds)
                else { return usageError("--sale-seconds needs a whole number of seconds, 0 to 31536000 (a year)") }
                options.saleSeconds = seconds
            case "--code-seconds":
                guard let value = rest.popFirst(), let seconds = wholeNumber(value).flatMap(Int64.init(exactly:)), (1...86_400).contains(seconds)
                else { return usageError("--code-seconds needs a whole number of seconds, 1 to 86400 (a day)") }
                options.codeSeconds = seconds
            case "--print-after":
                guard let value = rest.popFirst(), let seconds = decimalNumber(value), (0...86_400).contains(seconds)
                else { return usageError("--print-after needs a number of seconds, 0 to 86400") }
                options.printAfter = seconds
            case "-h", "--help":
                Output.write(usage)
                return 0
            default:
                return usageError("unknown option \(printable: argument)")
            }
        }
        return reportingErrors { try Demo(options: options).run() }
    }

}

/// The demo's state and screen. Everything runs on the loop's thread (the
/// main thread), so the mutable state lives in `Screen`, touched only there.
private final class Demo: @unchecked Sendable {
    let options: DemoCommand.Options
    let loop: TimerLoop
    let center: CountdownCenter
    let cooldowns: Cooldowns
    let sale: FlashSale
    var screen = Screen()
    let terminal: Terminal?
    /// Keys read but not handled yet: those after a "d" wait for the next
    /// frame, by which the drag has started or ended.
    var unhandledKeys: [UInt8] = []
    var timers: [AnyLoopTimer] = []
    var frames: FrameTicker?
    var monitor: FrameRateMonitor
    var observations: [CountdownObservation] = []
    /// Why the last save of the code's cooldown failed; nil if it did not
    /// (or none was tried). Shown on the screen, and said at exit.
    var saveFailure: CountdownError?
    /// Why the state file could not be restored at the start (there, but
    /// corrupt or unreadable); nil if it was, or there was none. Such a
    /// file is left as it is: the cooldowns never save over what they could
    /// not read, so a code sent runs unsaved. Shown on the screen, and said
    /// at exit.
    var restoreFailure: CountdownError?
    /// Whether the demo quit because it was left in the background with no
    /// shell to bring it back (``Terminal/isOrphanedInBackground``): said at
    /// exit, with status 1.
    var quitOrphaned = false

    /// What is on the screen (changed on the loop's thread only).
    struct Screen {
        var saleText = ""
        var saleEnded = false
        var reloads = 0
        var carouselPage = 1
        var carouselTurns: UInt64 = 0
        var badgeRefreshes = 0
        var badgeSkipped: UInt64 = 0
        var dragRequested = false
        var dragging = false
        var codeText = ""
        var framesText = "measuring..."
        var frameIndex: UInt64 = 0
        var message = ""
        /// How long `message` stays.
        var messageLasts = MessageLife.untilReplaced
        var quit = false
    }

    /// How long the message under the screen stays.
    enum MessageLife {
        /// Until another replaces it.
        case untilReplaced
        /// While the code's cooldown runs: cleared when it ends.
        case whileCodeCoolsDown
        /// "wait N s before sending another code", N counting down with
        /// the cooldown, and cleared when it ends.
        case codeWait
    }

    /// Shows `text` under the screen for as long as `life` says.
    private func say(_ text: String, _ life: MessageLife = .untilReplaced) {
        screen.message = text
        screen.messageLasts = life
    }

    init(options: DemoCommand.Options) throws {
        self.options = options
        monitor = try FrameRateMonitor(framesPerSecond: 30)
        loop = try TimerLoop()
        center = try CountdownCenter(loop: loop)
        cooldowns = Cooldowns(center: center, file: options.statePath)
        // The server's payload arrived now and said this much is left.
        sale = FlashSale(center: center, remaining: .seconds(options.saleSeconds), receivedAt: loop.now(.boot))
        terminal = options.printAfter == nil ? Terminal(.screen) : nil
    }

    func run() throws -> Int32 {
        do {
            switch try cooldowns.restore() {
            case .sameBoot(let restored) where restored > 0: say("restored the code's cooldown", .whileCodeCoolsDown)
            case .anotherBoot(let server, let left) where server + left > 0:
                say("restored the code's cooldown after a reboot", .whileCodeCoolsDown)
            default: break
            }
        } catch .stateFileNotFound {
            // First run.
        } catch {
            restoreFailure = error
            say("could not restore \(printable: options.statePath): \(printable: stateFileFailureText(options.statePath, error)) (\(somethingIsAt(options.statePath) ? "left as it is: " : "")a code sent is not saved)")
        }
        try startTimers()
        if let after = options.printAfter {
            try loop.run(for: .milliseconds(Int64(after * 1_000)))
            update()
            Output.line(lines(ansi: false).joined(separator: "\n"))
            return reportStateFailures()
        }
        if isatty(1) == 1 && Terminal.isDumb {
            printError(
                "timerkit demo: the terminal (TERM=dumb) cannot draw the screen (use --print-after S to run without one)")
            return 1
        }
        do {
            try terminal?.open()
        } catch {
            guard error.errno == Errno(rawValue: ENOTTY) else { throw error }
            printError(
                "timerkit demo: standard input and output must be a terminal (use --print-after S to run without one)")
            return 1
        }
        defer { terminal?.close() }
        while !screen.quit {
            try loop.run()
        }
        terminal?.close()
        if quitOrphaned {
            printError(
                "timerkit demo: quit in the background, where no shell can bring it back to the terminal (the shell that started it is gone)")
        }
        let status = reportStateFailures()
        return quitOrphaned ? 1 : status
    }

    /// Says on standard error, where it outlives the screen, what went
    /// wrong with the state file: a file that could not be restored (left
    /// as it was) and a cooldown the user was told about but that a restart
    /// would not find. Returns the exit status: 1 after either, else 0.
    private func reportStateFailures() -> Int32 {
        if let restoreFailure {
            let left = somethingIsAt(options.statePath) ? " (the file was left as it was)" : ""
            printError(
                "timerkit demo: could not restore \(printable: options.statePath): \(printable: stateFileFailureText(options.statePath, restoreFailure))\(left)")
        }
        if let saveFailure {
            printError(
                "timerkit demo: the code's cooldown was not saved to \(printable: options.statePath): \(printable: stateFileFailureText(options.statePath, saveFailure))")
        }
        return restoreFailure == nil && saveFailure == nil ? 0 : 1
    }

    private func startTimers() throws {
        // The sale: a tick when its seconds change, "ended" once at zero.
        if !sale.hasEnded {
            observations.append(try sale.observe { [unowned self] event in
                if case .ended = event {
                    screen.saleEnded = true
                    screen.reloads += 1  // a shop reloads the page here
                }
                update()
            })
        } else {
            screen.saleEnded = true
        }
        // The carousel turns in every common mode, also during a drag.
        timers.append(try loop.schedule(after: .seconds(1), repeating: .seconds(1), in: .common) {
            [unowned self] _, missed in
            screen.carouselTurns += 1 + missed
            screen.carouselPage = Int(screen.carouselTurns % 5) + 1
            update()
        })
        // The badge refreshes in the default mode only: it waits during a
        // drag, then fires once, telling how many refreshes it skipped.
        timers.append(try loop.schedule(after: .seconds(1), repeating: .seconds(1)) {
            [unowned self] _, missed in
            screen.badgeRefreshes += 1
            screen.badgeSkipped += missed
            update()
        })
        // The screen's frames, 30 a second in every mode: each reads the
        // keys and redraws, and the monitor reports the rate they come at.
        frames = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 30), in: [.common]) {
            [unowned self] _, frame in
            if let reading = monitor.record(frame) { screen.framesText = reading.description }
            screen.frameIndex = frame.index
            handleKeys()
            update()
        }
    }

    /// Handles the keys read since the last frame, up to and including the
    /// first "d": a drag starts or ends only once this frame's callback has
    /// returned, so a second "d" read with it (a paste, key repeat) would
    /// find the drag not started or not ended yet. The screen is drawn once
    /// for them all, after them.
    private func handleKeys() {
        unhandledKeys += terminal?.keys() ?? []
        var handled = 0
        for key in unhandledKeys {
            handled += 1
            handle(key)
            if key == UInt8(ascii: "d") || screen.quit { break }
        }
        unhandledKeys.removeFirst(handled)
    }

    private func handle(_ key: UInt8) {
        switch key {
        case UInt8(ascii: "q"), 3:  // q, Ctrl-C
            screen.quit = true
            loop.stop()  // the innermost run: the drag's, which then stops the main one
        case 26:  // Ctrl-Z, a key in raw mode: stop as a shell's terminal would,
            // the whole process group (a script that started the demo too, so
            // that its shell sees the job stop)
            kill(0, SIGTSTP)
        case UInt8(ascii: "d"):
            if screen.dragging {
                loop.stop()  // ends the drag's nested run
            } else if !screen.dragRequested {
                screen.dragRequested = true
                // A drag: the loop runs nested in .tracking until the next "d",
                // from a callback of its own (not this timer's, which must keep
                // reading keys during the drag).
                do {
                    try loop.perform(after: .zero) { [unowned self] in drag() }
                } catch {
                    screen.dragRequested = false
                    say("the drag failed: \(printable: error)")
                }
            }
        case UInt8(ascii: "s"):
            if cooldowns.remaining(key: "code") != nil {
                say("", .codeWait)  // its text comes with the time left, in update()
            } else {
                do {
                    try cooldowns.cooldown(key: "code", duration: .seconds(options.codeSeconds))
                    say("code sent", .whileCodeCoolsDown)
                    saveFailure = nil
                    // Saved: the cooldowns read the file first (it could be
                    // read by now), and kept what it held.
                    restoreFailure = nil
                } catch {
                    say("code sent, but not saved: \(printable: stateFileFailureText(options.statePath, error))")
                    saveFailure = error
                }
            }
        default:
            break
        }
    }

    /// Runs the loop in `.tracking` until stopped: what a list does while a
    /// finger drags it.
    private func drag() {
        screen.dragRequested = false
        screen.dragging = true  // shown only once the tracking run is about to start
        update()
        do {
            try loop.run(mode: .tracking)
        } catch {
            say("the drag failed: \(printable: error)")
        }
        screen.dragging = false
        if screen.quit { loop.stop() }  // "q" during the drag: the main run too
        update()
    }

    /// Recomputes the texts from the clocks and redraws.
    private func update() {
        if let left = sale.remaining {
            screen.saleText = "starts in \(clock(left))"
        } else {
            // "ended" fires once: the page reloads once, also for a sale at
            // zero from the start (0 only if it ended before the demo
            // observed it).
            screen.saleText = "started; the page reloaded \(times(UInt64(screen.reloads)))"
        }
        let codeLeft = cooldowns.remaining(key: "code")
        if let left = codeLeft {
            screen.codeText = "sent; resend in \(seconds(left)) s" + (saveFailure == nil ? "" : " (not saved)")
        } else {
            screen.codeText = "press s to send a code"
        }
        // A message about the cooldown goes with it, never saying other than
        // the Code line.
        switch (screen.messageLasts, codeLeft) {
        case (.untilReplaced, _): break
        case (.codeWait, let left?): screen.message = "wait \(seconds(left)) s before sending another code"
        case (.whileCodeCoolsDown, _?): break
        case (.codeWait, nil), (.whileCodeCoolsDown, nil): say("")
        }
        terminal?.draw(lines(ansi: true))
        // A screen that cannot be drawn (the terminal gone, with SIGHUP
        // ignored), or left in the background with no shell to bring it
        // back, is quit, as with q: the run does not go on unseen.
        guard let terminal, !screen.quit else { return }
        if terminal.isOrphanedInBackground { quitOrphaned = true }
        if Output.failed || quitOrphaned {
            screen.quit = true
            loop.stop()
        }
    }

    private func lines(ansi: Bool) -> [String] {
        let bold = ansi ? "\u{1B}[1m" : ""
        let plain = ansi ? "\u{1B}[0m" : ""
        return [
            "\(bold)TimerKit demo\(plain)   q quits, d starts or ends the drag, s sends a code",
            "",
            "Flash sale   \(screen.saleText)",
            // Each row fits 80 columns, a terminal's usual width (with
            // thousands of turns and refreshes).
            "Carousel     page \(screen.carouselPage) of 5, turned \(times(screen.carouselTurns)) (common modes: turns in a drag)",
            "Badge        refreshed \(times(UInt64(screen.badgeRefreshes))), \(screen.badgeSkipped) skipped (default mode: waits in a drag)",
            "Drag         \(screen.dragging ? "dragging: the loop runs in tracking mode" : "not dragging")",
            "Code         \(screen.codeText)",
            "Wall clock   \(wallClockText()) UTC (changing it moves nothing above)",
            "Frames       \(screen.framesText)",
            "Ticker       frame \(screen.frameIndex) of a 30 Hz ticker in the common modes",
            "",
            screen.message,
        ]
    }

    /// "1 time", "2 times".
    private func times(_ count: UInt64) -> String {
        "\(count) time\(count == 1 ? "" : "s")"
    }

    /// The wall clock as `yyyy-mm-dd hh:mm:ss`, UTC.
    private func wallClockText() -> String {
        // Whole seconds rounded down, before 1970 too (where dividing
        // rounds toward zero, up).
        let nanoseconds = loop.now(.wall).offset.saturatingNanoseconds
        var seconds = time_t(nanoseconds / 1_000_000_000 - (nanoseconds % 1_000_000_000 < 0 ? 1 : 0))
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil else { return "?" }
        return String(
            format: "%04d-%02d-%02d %02d:%02d:%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
            parts.tm_hour, parts.tm_min, parts.tm_sec)
    }

    /// `h:mm:ss`, rounded up to the second as a countdown shows it.
    private func clock(_ duration: Duration) -> String {
        let total = seconds(duration)
        return String(format: "%02lld:%02lld:%02lld", total / 3_600, total / 60 % 60, total % 60)
    }

    /// Whole seconds, rounded up.
    private func seconds(_ duration: Duration) -> Int64 {
        let nanoseconds = duration.saturatingNanoseconds
        return nanoseconds / 1_000_000_000 + (nanoseconds % 1_000_000_000 > 0 ? 1 : 0)
    }
}
