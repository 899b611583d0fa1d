import Foundation
import TimerKit

/// `timerkit fps`: a FrameTicker with simulated work, watched by a
/// FrameRateMonitor, as an FPS label watches an app.
///
/// Each frame spins for `--work-ms` of CPU time; on `--jank` percent of the
/// frames (chosen by a seeded generator) it spins for `--spike-ms` instead.
/// A line updates in place once a second with the frames per second, the
/// p99 frame time, the dropped frames and the hitch time; `--json` prints
/// one summary object at the end instead. Ctrl-C ends the run early with
/// the summary so far (`Interrupt`).
enum FpsCommand: Subcommand {
    static let name = "fps"

    static let usage = """
        usage: timerkit fps [--rate HZ] [--seconds S] [--work-ms X] [--jank P] [--spike-ms Y]
                            [--seed N] [--json]

          Runs a frame ticker at HZ frames per second (1 to 1000, default 60) for S seconds
          (0.1 to 86400, default 10), each frame busy for X ms (0 to 10000, default 0) and,
          on P % of the frames (0 to 100, default 0), for Y ms instead (0 to 10000, default
          50; a frame's work stops where the run ends); the frames that spike are picked
          by a generator seeded with N (a whole number, default 1). Numbers are decimal.
          Shows fps, p99 frame time, dropped frames and hitch time (ms per s) on one line
          that updates in place (a line a second to a file or a pipe, or with TERM=dumb);
          --json prints one summary object at the end (its measured fields null when
          fewer than two frames came). Ctrl-C ends the run early: the summary so far is
          printed ("interrupted: ...", or "interrupted": true), then the program ends
          by SIGINT; a second Ctrl-C ends it at once.

        """

    struct Options {
        var rate = 60.0
        var seconds = 10.0
        var workMilliseconds = 0.0
        var jankPercent = 0.0
        var spikeMilliseconds = 50.0
        var seed: UInt64 = 1
        var json = false
    }

    static func run(_ arguments: ArraySlice<String>) -> Int32 {
        var options = Options()
        var rest = arguments
        func number(_ name: String, _ range: ClosedRange<Double>) -> Double? {
            guard let text = rest.popFirst(), let value = decimalNumber(text), range.contains(value) else {
                return nil
            }
            return value
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--rate":
                guard let value = number(argument, 1...1000) else { return usageError("--rate needs 1 to 1000 frames per second") }
                options.rate = value
            case "--seconds":
                guard let value = number(argument, 0.1...86_400) else { return usageError("--seconds needs 0.1 to 86400 seconds") }
                options.seconds = value
            case "--work-ms":
                guard let value = number(argument, 0...10_000) else { return usageError("--work-ms needs 0 to 10000 ms") }
                options.workMilliseconds = value
            case "--jank":
                guard let value = number(argument, 0...100) else { return usageError("--jank needs a percentage, 0 to 100") }
                options.jankPercent = value
            case "--spike-ms":
                guard let value = number(argument, 0...10_000) else { return usageError("--spike-ms needs 0 to 10000 ms") }
                options.spikeMilliseconds = value
            case "--seed":
                guard let text = rest.popFirst(), let value = wholeNumber(text) else { return usageError("--seed needs a whole number") }
                options.seed = value
            case "--json":
                options.json = true
            case "-h", "--help":
                Output.write(usage)
                return 0
            default:
                return usageError("unknown option \(printable: argument)")
            }
        }
        return reportingErrors { try FpsRun(options: options).run() }
    }

}

/// One run. The monitor and the generator are touched on the loop's thread
/// only (the calling thread, which runs the loop).
private final class FpsRun: @unchecked Sendable {
    let options: FpsCommand.Options
    let loop: TimerLoop
    var monitor: FrameRateMonitor
    var generator: UInt64
    var spikes = 0
    /// When the run ends: no frame's work spins past it.
    var runEnd = MonotonicClock.Instant(offset: .nanoseconds(Int64.max))
    /// The status line, when standard output is a terminal that takes
    /// escapes (with `TERM=dumb`, a line at a time, as to a file).
    let terminal: Terminal? = isatty(1) == 1 && !Terminal.isDumb ? Terminal(.statusLine) : nil

    init(options: FpsCommand.Options) throws {
        self.options = options
        loop = try TimerLoop()
        monitor = try FrameRateMonitor(framesPerSecond: options.rate)
        generator = options.seed
    }

    func run() throws -> Int32 {
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: options.rate)) {
            [unowned self] _, frame in
            if let reading = monitor.record(frame), !options.json { show(reading) }
            work(from: frame.deliveredAt)
        }
        defer { ticker.invalidate() }
        // Ctrl-C stops the run early, with the summary so far; watched
        // until the summary is out (main then ends the process by SIGINT).
        let interrupt = try Interrupt(stopping: loop)
        defer { interrupt.stopWatching() }
        if !options.json {
            try terminal?.open()
            show(nil)
        }
        defer { terminal?.close() }
        // One reading for both: the run's end and where a frame's work stops.
        runEnd = MonotonicClock.now + .nanoseconds(Int64(options.seconds * 1e9))
        try loop.run(until: runEnd)
        let summary = monitor.summary
        let interrupted = Interrupt.requested
        if options.json {
            Output.line(json(summary, ticker: ticker, interrupted: interrupted).renderLine())
        } else {
            // The line wraps again for the summary, which is never cut.
            terminal?.showStatus("")
            terminal?.close()
            let measured = summary.map { line($0) } ?? "no frame time measured"
            Output.line("\(interrupted ? "interrupted" : "done"): \(measured) over \(ticker.frameCount) frames")
        }
        return 0
    }

    /// Spins for this frame's work: the CPU is busy, as with real rendering.
    /// The work stops where the run ends, so that the run lasts `--seconds`
    /// whatever one frame's work would take, and at Ctrl-C.
    private func work(from start: MonotonicClock.Instant) {
        var milliseconds = options.workMilliseconds
        if options.jankPercent > 0 && Double(next() % 10_000) < options.jankPercent * 100 {
            milliseconds = options.spikeMilliseconds
            spikes += 1
        }
        guard milliseconds > 0 else { return }
        let end = min(start + .nanoseconds(Int64(milliseconds * 1e6)), runEnd)
        while MonotonicClock.now < end && !Interrupt.requested {}
    }

    /// SplitMix64.
    private func next() -> UInt64 {
        generator &+= 0x9E37_79B9_7F4A_7C15
        var z = generator
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private func line(_ reading: FrameRateMonitor.Reading) -> String {
        func fixed(_ value: Double) -> String { String(format: "%.1f", value) }
        let p99 = Double(reading.frameTimeP99.saturatingNanoseconds) / 1e6
        return "fps \(fixed(reading.framesPerSecond))  p99 \(fixed(p99)) ms  dropped \(reading.droppedFrames)  "
            + "hitch \(fixed(reading.hitchMillisecondsPerSecond)) ms/s (\(reading.grade))"
    }

    private func show(_ reading: FrameRateMonitor.Reading?) {
        let text = reading.map { line($0) } ?? "fps ...  measuring the first second at \(options.rate) Hz"
        if let terminal {
            terminal.showStatus(text)
        } else {
            // A line at a time, as they come.
            Output.line(text)
        }
        // Nobody sees the frames any more: a failed write (a full disk, a
        // pipe whose reader left, with SIGPIPE ignored) ends the run early.
        if Output.failed { loop.stop() }
    }

    private func json(_ summary: FrameRateMonitor.Reading?, ticker: FrameTicker, interrupted: Bool) -> JSON {
        func ms(_ duration: Duration) -> JSON { .number(Double(duration.saturatingNanoseconds) / 1e6, digits: 3) }
        var members: [(String, JSON)] = [
            ("rate", .number(options.rate, digits: 3)),
            ("seconds", .number(options.seconds, digits: 3)),
            ("work_ms", .number(options.workMilliseconds, digits: 3)),
            ("jank_percent", .number(options.jankPercent, digits: 3)),
            ("spike_ms", .number(options.spikeMilliseconds, digits: 3)),
            ("seed", .uint(options.seed)),
            ("frames", .uint(ticker.frameCount)),
            ("spikes", .int(Int64(spikes))),
            ("ticker_dropped", .uint(ticker.droppedFrameCount)),
            ("interrupted", .bool(interrupted)),
        ]
        if let summary {
            members += [
                ("fps", .number(summary.framesPerSecond, digits: 3)),
                ("frame_time_p50_ms", ms(summary.frameTimeP50)),
                ("frame_time_p95_ms", ms(summary.frameTimeP95)),
                ("frame_time_p99_ms", ms(summary.frameTimeP99)),
                ("frame_time_max_ms", ms(summary.frameTimeMax)),
                ("dropped", .uint(summary.droppedFrames)),
                ("hitch_ms_per_s", .number(summary.hitchMillisecondsPerSecond, digits: 3)),
                ("grade", .string(summary.grade.description)),
            ]
        } else {
            // No frame time measured (no frame after the first): every
            // field is there all the same, each null.
            for name in [
                "fps", "frame_time_p50_ms", "frame_time_p95_ms", "frame_time_p99_ms", "frame_time_max_ms",
                "dropped", "hitch_ms_per_s", "grade",
            ] {
                members.append((name, .null))
            }
        }
        return .object(members)
    }
}
