import CTimerCore
import TimerKit
import TrustedTime

/// `timerkit clocks`: every clock's reading and resolution, through
/// TimerKit's clocks and through the C core (tk_clock_now,
/// tk_clock_resolution), the boot id, this thread's timer slack and the time
/// spent suspended.
enum ClocksCommand: Subcommand {
    static let name = "clocks"

    static let usage = """
        usage: timerkit clocks

          Prints every clock's reading and resolution, through TimerKit's clocks and through
          the C core (tk_clock_now, tk_clock_resolution), the boot id, this thread's timer
          slack, and BOOTTIME - MONOTONIC (the time spent suspended). It takes no options.

        """

    static func run(_ arguments: ArraySlice<String>) -> Int32 {
        // As the other commands read theirs: the first one decides.
        if let argument = arguments.first {
            guard argument == "-h" || argument == "--help" else { return usageError("unknown option \(printable: argument)") }
            Output.write(usage)
            return 0
        }
        return printClocks()
    }

    private static func printClocks() -> Int32 {
        var failures: [String] = []
        var lines: [String] = []

        func core(_ clock: tk_clock, _ name: String) -> (now: Int64, resolution: Int64)? {
            var now: Int64 = 0
            var resolution: Int64 = 0
            let a = tk_clock_now(clock, &now)
            let b = tk_clock_resolution(clock, &resolution)
            if a != 0 { failures.append("tk_clock_now(\(name)): \(Errno(rawValue: a))") }
            if b != 0 { failures.append("tk_clock_resolution(\(name)): \(Errno(rawValue: b))") }
            return a == 0 && b == 0 ? (now, resolution) : nil
        }

        lines.append(
            pad("clock", 10) + pad("TimerKit (s)", 24, right: true)
                + pad("tk_clock_now (s)", 24, right: true)
                + pad("resolution (Swift / C)", 26, right: true))
        let clocks: [(ClockID, (now: Duration, resolution: Duration), tk_clock)] = [
            (.monotonic, (MonotonicClock().now.offset, MonotonicClock().minimumResolution), TK_CLOCK_MONOTONIC),
            (.boot, (BootClock().now.offset, BootClock().minimumResolution), TK_CLOCK_BOOTTIME),
            (.wall, (WallClock().now.offset, WallClock().minimumResolution), TK_CLOCK_REALTIME),
        ]
        for (id, swift, raw) in clocks {
            let c = core(raw, id.description)
            lines.append(
                pad(id.description, 10)
                    + pad(seconds(swift.now.saturatingNanoseconds), 24, right: true)
                    + pad(c.map { seconds($0.now) } ?? "-", 24, right: true)
                    + pad("\(swift.resolution.saturatingNanoseconds) ns / " + (c.map { "\($0.resolution) ns" } ?? "-"),
                          26, right: true))
        }
        lines.append(pad("", 10) + "  wall = " + TrustedTime(sinceEpoch: WallClock().now.offset).description)
        lines.append("")

        do throws(TimerError) {
            lines.append("boot id (BootClock.bootID):        \(try BootClock.bootID())")
        } catch {
            failures.append("boot id: \(printable: error)")
        }

        var slack: Int64 = 0
        let slackResult = tk_timer_slack(&slack)
        if slackResult == 0 {
            lines.append("timer slack (tk_timer_slack):      \(slack) ns (\(micros(slack)) us), this thread")
        } else {
            failures.append("tk_timer_slack: \(Errno(rawValue: slackResult))")
        }

        // BOOTTIME - MONOTONIC, with the boot reading bracketed by two
        // monotonic ones; the bracket bounds the error.
        let before = MonotonicClock().now
        let boot = BootClock().now
        let after = MonotonicClock().now
        let suspended = boot.offset - (before.offset + (after - before) / 2)
        lines.append(
            "suspended (BOOTTIME - MONOTONIC):  \(seconds(suspended.saturatingNanoseconds)) s "
                + "(+/- \(((after - before).saturatingNanoseconds + 1) / 2) ns)")

        Output.line(lines.joined(separator: "\n"))
        for failure in failures { printError("timerkit clocks: \(failure)") }
        return failures.isEmpty ? 0 : 1
    }
}
