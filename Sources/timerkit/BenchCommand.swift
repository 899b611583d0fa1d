import Foundation

/// `timerkit bench [--quick] [--json] [--seed N]`: TimerKit against Foundation,
/// Dispatch and the standard library, measured in one run.
enum BenchCommand {
    struct Options {
        var quick = false
        var json = false
        var seed: UInt64?
    }

    /// The goals the figures are judged against.
    static let scheduleTargetNs = 150.0
    static let scheduleTargetPending = 100_000
    static let latenessTargetRatio = 1.2

    static func run(_ options: Options) -> Int32 {
        let seed = options.seed
            ?? ProcessInfo.processInfo.environment["TK_SEED"].flatMap { UInt64($0) }
            ?? UInt64(truncatingIfNeeded: monotonicNanoseconds() ^ Int64(getpid()))
        var rng = SeededGenerator(seed: seed)
        let machine = Machine.describe()
        let loadBefore = Machine.loadAverage()
        progress("bench\(options.quick ? " --quick" : ""), seed \(seed)")
        let started = monotonicNanoseconds()
        var failures: [String] = []

        let schedule = ScheduleConfig(
            sizes: options.quick ? [1_000, 10_000] : [1_000, 10_000, 100_000],
            foundationCap: 10_000, reps: options.quick ? 3 : 7,
            repTargetNs: options.quick ? 2_000_000 : 25_000_000)
        let lateness = LatenessConfig(
            periods: [1_000_000, 5_000_000], rounds: options.quick ? [1, 1] : [80, 40],
            firesPerRound: options.quick ? 12 : 26)
        let tolerance = ToleranceConfig(
            sleeps: options.quick ? 8 : 100, timers: 1_000, reps: options.quick ? 1 : 5)

        let scheduleRows = ScheduleBench.run(schedule, rng: &rng, failures: &failures)
        let latenessResults = LatenessBench.run(lateness, failures: &failures)
        let toleranceResult = ToleranceBench.run(tolerance, rng: &rng, failures: &failures)
        let elapsed = monotonicNanoseconds() - started
        progress("done in \(fixed(Double(elapsed) / 1e9, 1)) s")

        let report = Report(
            quick: options.quick, seed: seed, machine: machine, elapsedNs: elapsed,
            load: (loadBefore, Machine.loadAverage()),
            schedule: schedule, scheduleRows: scheduleRows, lateness: lateness,
            latenessResults: latenessResults, tolerance: tolerance, toleranceResult: toleranceResult,
            failures: failures)
        print(options.json ? report.json.render() : report.text)
        for failure in failures {
            FileHandle.standardError.write(Data("timerkit bench: FAILED: \(failure)\n".utf8))
        }
        return failures.isEmpty ? 0 : 1
    }
}

/// The figures of one run, as a table or as JSON.
struct Report {
    var quick: Bool
    var seed: UInt64
    var machine: Machine
    var elapsedNs: Int64
    /// The load averages before and after the run.
    var load: (before: String, after: String)
    var schedule: ScheduleConfig
    var scheduleRows: [ScheduleRow]
    var lateness: LatenessConfig
    var latenessResults: [LatenessResult]
    var tolerance: ToleranceConfig
    var toleranceResult: ToleranceResult
    var failures: [String]

    private func timerKitRow(_ pending: Int) -> ScheduleRow? {
        scheduleRows.first { $0.pending == pending && $0.side.hasPrefix("TimerKit") }
    }

    /// The size the schedule target is judged at (the largest measured).
    private var judgedSize: Int { schedule.sizes.max() ?? 0 }

    // MARK: Text

    var text: String {
        var out: [String] = []
        out.append("timerkit bench\(quick ? " --quick" : "") (seed \(seed))")
        out.append("machine: \(machine.processors) CPUs, \(machine.cpuModel), Linux \(machine.kernel); timer slack \(machine.timerSlack) ns; run took \(fixed(Double(elapsedNs) / 1e9, 1)) s")
        out.append("load average (1/5/15 min): \(load.before) before, \(load.after) after")
        out.append("")
        scheduleText(&out)
        latenessText(&out)
        toleranceText(&out)
        targetsText(&out)
        if !failures.isEmpty {
            out.append("")
            out.append("FAILED sides:")
            for failure in failures { out.append("  \(failure)") }
        }
        return out.joined(separator: "\n")
    }

    private func scheduleText(_ out: inout [String]) {
        out.append("1. Schedule + invalidate one-shot timers, ns per pair (median of \(schedule.reps) timed reps after a warm-up)")
        out.append("   n pending timers with delays uniform in [\(schedule.minDelay / 1_000_000_000) s, \(schedule.maxDelay / 1_000_000_000) s) are scheduled first; no loop runs.")
        out.append("   pair: schedule a new timer, invalidate it. churn: schedule a new timer, invalidate a random pending one.")
        out.append("   TimerKit: loop.schedule(after:) + invalidate(); C core (reference, what the facade is built on): tk_loop_schedule +")
        out.append("   tk_loop_cancel called from Swift; Foundation: Timer(fire:interval:repeats:block:) + RunLoop.add + invalidate();")
        out.append("   Dispatch: makeTimerSource + schedule + setEventHandler + resume + cancel, each batch ending with queue.sync {}.")
        out.append("   wall = elapsed (wall-clock) time per pair; cpu = CPU time of the whole process (all threads) per pair.")
        out.append("   Foundation is measured up to \(schedule.foundationCap) pending only: CFRunLoop inserts into a sorted array and")
        out.append("   finds a timer to invalidate by linear search, O(n) per operation.")
        if quick { out.append("   (--quick: the largest size is \(judgedSize), not 100k)") }
        out.append("")
        out.append("   " + pad("side", 31) + pad("pending", 8, right: true) + pad("pair", 10, right: true)
            + pad("per call", 10, right: true) + pad("cpu", 9, right: true) + pad("churn", 10, right: true)
            + pad("cpu", 9, right: true) + pad("pair/TK", 9, right: true) + pad("churn/TK", 10, right: true)
            + "   reps fastest..slowest (pair)")
        var lastSize = -1
        for row in scheduleRows {
            if row.pending != lastSize && lastSize != -1 { out.append("") }
            lastSize = row.pending
            var line = "   " + pad(row.side, 31) + pad(String(row.pending), 8, right: true)
            if let skipped = row.skipped {
                line += "   not measured: \(skipped)"
                out.append(line)
                continue
            }
            if let failed = row.failed {
                line += "   FAILED: \(failed)"
                out.append(line)
                continue
            }
            let tk = timerKitRow(row.pending)
            line += pad(fixed(row.pair.wallNs, 0), 10, right: true)
            line += pad(fixed(row.pair.wallNs / 2, 0), 10, right: true)
            line += pad(fixed(row.pair.cpuNs, 0), 9, right: true)
            line += pad(fixed(row.churn.wallNs, 0), 10, right: true)
            line += pad(fixed(row.churn.cpuNs, 0), 9, right: true)
            line += pad(ratio(row.pair.wallNs, tk?.pair.wallNs ?? .nan), 9, right: true)
            line += pad(ratio(row.churn.wallNs, tk?.churn.wallNs ?? .nan), 10, right: true)
            line += "   \(row.pair.opsPerRep) x \(row.pair.reps): \(fixed(row.pair.fastestNs, 0))..\(fixed(row.pair.slowestNs, 0))"
            out.append(line)
        }
        out.append("")
    }

    private func latenessText(_ out: inout [String]) {
        out.append("2. Wake-up lateness of a repeating timer, us (fire time - intended time, read on the monotonic clock;")
        out.append("   Task.sleep on its own clock). Rounds of \(lateness.firesPerRound) fires per side, the side order rotating each round;")
        out.append("   the first \(lateness.discard) fire of each round is left out on every side (so Foundation counts from its second fire),")
        out.append("   and one untimed warm-up round per side comes first.")
        out.append("   A fire is measured against the deadline it waited for; whole periods that passed are skipped (\"skipped\": TimerKit's")
        out.append("   missed count, Dispatch's source data; for Foundation and the sleeping loops, the grid points before the fire).")
        out.append("   C loop: tk_loop_run, repeating C timer, C function callback. TimerKit: TimerLoop.run + repeating LoopTimer.")
        out.append("   Foundation: Timer(timeInterval:repeats:block:) on RunLoop.current. Dispatch: repeating source, leeway 0, serial queue.")
        out.append("   Task.sleep(until:) / MonotonicClock.sleep(until:): a task sleeping to each grid instant in turn.")
        for result in latenessResults {
            out.append("")
            out.append("   period \(micros(result.period)) us")
            out.append("   " + pad("side", 34) + pad("fires", 6, right: true) + pad("p50", 8, right: true)
                + pad("p90", 8, right: true) + pad("p99", 8, right: true) + pad("max", 9, right: true)
                + pad("mean", 8, right: true) + pad("early", 6, right: true) + pad("skipped", 8, right: true)
                + pad("p50/C", 8, right: true) + pad("p99/C", 8, right: true))
            let c = result.sides[0].summary
            for side in result.sides {
                var line = "   " + pad(side.name, 34)
                if let failed = side.failed {
                    out.append(line + "   FAILED: \(failed)")
                    continue
                }
                let s = side.summary
                line += pad(String(s.count), 6, right: true) + pad(micros(s.p50), 8, right: true)
                line += pad(micros(s.p90), 8, right: true) + pad(micros(s.p99), 8, right: true)
                line += pad(micros(s.max), 9, right: true) + pad(fixed(s.mean / 1000, 1), 8, right: true)
                line += pad(String(side.early), 6, right: true) + pad(String(side.skipped), 8, right: true)
                line += pad(ratio(Double(s.p50), Double(c.p50)), 8, right: true)
                line += pad(ratio(Double(s.p99), Double(c.p99)), 8, right: true)
                out.append(line)
            }
            let swift = result.sides[1].summary
            out.append("   Swift/C: p50 \(ratio(Double(swift.p50), Double(c.p50))), p99 \(ratio(Double(swift.p99), Double(c.p99)))")
            if !result.foundationFirstFire.isEmpty {
                let first = Summary(result.foundationFirstFire)
                let offsets = Summary(result.foundationFireDateOffset)
                out.append("   Foundation first fire after creation (Timer(timeInterval: \(micros(result.period)) us, repeats: true)): median \(micros(first.p50)) us, min \(micros(first.min)), max \(micros(first.max)) over \(first.count) timers; fireDate - creation time \(micros(offsets.p50)) us")
            }
        }
        out.append("")
    }

    private func toleranceText(_ out: inout [String]) {
        out.append("3. Tolerance")
        out.append("   (a) a \(micros(tolerance.sleepFor)) us sleep, \(tolerance.sleeps) of each kind interleaved: how much longer than \(micros(tolerance.sleepFor)) us it took, us")
        out.append("   " + pad("sleep", 44) + pad("tolerance", 10, right: true) + pad("mean", 9, right: true)
            + pad("p50", 9, right: true) + pad("p99", 9, right: true) + pad("max", 9, right: true)
            + pad("min", 9, right: true))
        for figure in toleranceResult.sleeps {
            var line = "   " + pad(figure.name, 44)
                + pad(figure.tolerance.map { micros($0.nanoseconds) } ?? "nil", 10, right: true)
            if let failed = figure.failed {
                out.append(line + "   FAILED: \(failed)")
                continue
            }
            let s = figure.summary
            line += pad(fixed(s.mean / 1000, 1), 9, right: true) + pad(micros(s.p50), 9, right: true)
                + pad(micros(s.p99), 9, right: true) + pad(micros(s.max), 9, right: true)
                + pad(micros(s.min), 9, right: true)
            out.append(line)
        }
        out.append("")
        out.append("   (b) \(tolerance.timers) one-shot timers, deadlines uniform in [\(micros(tolerance.minDeadline)), \(micros(tolerance.maxDeadline))] us, median of \(tolerance.reps) reps;")
        out.append("   TimerKit: a TimerLoop run on this thread (its wake-up counter); Dispatch: sources on a serial queue, the main thread")
        out.append("   waiting on a semaphore. ctx switches: voluntary, summed over /proc/self/task/*/status (all threads; /proc/self/status")
        out.append("   alone covers only the main thread, shown as \"main\"). Lateness = fire time - deadline, us.")
        out.append("   " + pad("timers", 30) + pad("tolerance", 10, right: true) + pad("wakeups", 9, right: true)
            + pad("ctx sw", 8, right: true) + pad("main", 6, right: true) + pad("late p50", 10, right: true)
            + pad("p99", 9, right: true) + pad("max", 9, right: true) + pad("early", 6, right: true))
        for figure in toleranceResult.wakeups {
            var line = "   " + pad(figure.name, 30) + pad(micros(figure.toleranceNs), 10, right: true)
            if let failed = figure.failed {
                out.append(line + "   FAILED: \(failed)")
                continue
            }
            let late = Summary(figure.lateness)
            line += pad(figure.loopWakeups.isEmpty ? "-" : fixed(median(figure.loopWakeups.map(Double.init)), 0), 9, right: true)
            line += pad(fixed(median(figure.contextSwitches.map(Double.init)), 0), 8, right: true)
            line += pad(fixed(median(figure.mainThreadSwitches.map(Double.init)), 0), 6, right: true)
            line += pad(micros(late.p50), 10, right: true) + pad(micros(late.p99), 9, right: true)
                + pad(micros(late.max), 9, right: true) + pad(String(figure.early), 6, right: true)
            out.append(line)
        }
        out.append("")
    }

    private func targetsText(_ out: inout [String]) {
        out.append("Targets")
        if let tk = timerKitRow(judgedSize), tk.failed == nil {
            let met = tk.pair.wallNs <= BenchCommand.scheduleTargetNs
            out.append("   Swift schedule+invalidate <= \(fixed(BenchCommand.scheduleTargetNs, 0)) ns per pair at \(BenchCommand.scheduleTargetPending) pending: \(fixed(tk.pair.wallNs, 0)) ns per pair (\(fixed(tk.pair.wallNs / 2, 0)) per call; churn \(fixed(tk.churn.wallNs, 0))) at \(judgedSize) pending -> \(met ? "MET" : "NOT MET")\(judgedSize != BenchCommand.scheduleTargetPending ? " (judged at \(judgedSize), not the target size)" : "")")
            out.append("      judged on the wall-clock median; process CPU time \(fixed(tk.pair.cpuNs, 0)) ns per pair, fastest rep \(fixed(tk.pair.fastestNs, 0)) ns")
            if let core = scheduleRows.first(where: { $0.pending == judgedSize && $0.side.hasPrefix("C core") }),
                core.failed == nil
            {
                out.append("      the C core alone: \(fixed(core.pair.wallNs, 0)) ns per pair; the Swift facade adds \(fixed(tk.pair.wallNs - core.pair.wallNs, 0)) ns per pair")
            }
        } else {
            out.append("   Swift schedule+invalidate: not measured (FAILED)")
        }
        for result in latenessResults {
            let c = result.sides[0]
            let swift = result.sides[1]
            guard c.failed == nil, swift.failed == nil else {
                out.append("   Swift loop lateness at \(micros(result.period)) us: not measured (FAILED)")
                continue
            }
            let p50 = Double(swift.summary.p50) / Double(c.summary.p50)
            let p99 = Double(swift.summary.p99) / Double(c.summary.p99)
            let met = p50 <= BenchCommand.latenessTargetRatio && p99 <= BenchCommand.latenessTargetRatio
            out.append("   Swift loop lateness p50/p99 within \(fixed(BenchCommand.latenessTargetRatio, 1))x of the C loop, \(micros(result.period)) us period: p50 \(fixed(p50, 2))x, p99 \(fixed(p99, 2))x -> \(met ? "MET" : "NOT MET")\(quick ? " (--quick: too few fires to judge)" : "")")
        }
    }

    // MARK: JSON

    var json: JSON {
        var members: [(String, JSON)] = [
            ("quick", .bool(quick)), ("seed", .string(String(seed))),
            ("machine", .object([
                ("nproc", .int(Int64(machine.processors))), ("cpu", .string(machine.cpuModel)),
                ("kernel", .string(machine.kernel)), ("timer_slack_ns", .int(machine.timerSlack)),
                ("load_before", .string(load.before)), ("load_after", .string(load.after)),
            ])),
            ("elapsed_s", .number(Double(elapsedNs) / 1e9)),
        ]
        members.append(("schedule", .object([
            ("delay_range_ns", .array([.int(schedule.minDelay), .int(schedule.maxDelay)])),
            ("foundation_cap", .int(Int64(schedule.foundationCap))),
            ("rows", .array(scheduleRows.map { row in
                var m: [(String, JSON)] = [("side", .string(row.side)), ("pending", .int(Int64(row.pending)))]
                if let skipped = row.skipped {
                    m.append(("skipped", .string(skipped)))
                } else if let failed = row.failed {
                    m.append(("failed", .string(failed)))
                } else {
                    let tk = timerKitRow(row.pending)
                    m.append(("pair", row.pair.json))
                    m.append(("churn", row.churn.json))
                    m.append(("pair_vs_timerkit", .number(row.pair.wallNs / (tk?.pair.wallNs ?? .nan))))
                    m.append(("churn_vs_timerkit", .number(row.churn.wallNs / (tk?.churn.wallNs ?? .nan))))
                }
                return .object(m)
            })),
        ])))
        members.append(("lateness", .array(latenessResults.map { result in
            let c = result.sides[0].summary
            var m: [(String, JSON)] = [
                ("period_ns", .int(result.period)), ("fires_per_round", .int(Int64(lateness.firesPerRound))),
                ("discarded_per_round", .int(Int64(lateness.discard))),
                ("sides", .array(result.sides.map { side in
                    var s: [(String, JSON)] = [("side", .string(side.name))]
                    if let failed = side.failed {
                        s.append(("failed", .string(failed)))
                    } else {
                        s.append(("lateness", side.summary.json))
                        s.append(("early", .int(Int64(side.early))))
                        s.append(("skipped", .int(side.skipped)))
                        s.append(("p50_vs_c", .number(Double(side.summary.p50) / Double(c.p50))))
                        s.append(("p99_vs_c", .number(Double(side.summary.p99) / Double(c.p99))))
                    }
                    return .object(s)
                })),
            ]
            if !result.foundationFirstFire.isEmpty {
                m.append(("foundation_first_fire_after_creation", Summary(result.foundationFirstFire).json))
                m.append(("foundation_firedate_minus_creation_ns", .int(Summary(result.foundationFireDateOffset).p50)))
            }
            return .object(m)
        })))
        members.append(("tolerance", .object([
            ("sleeps", .array(toleranceResult.sleeps.map { figure in
                var m: [(String, JSON)] = [
                    ("sleep", .string(figure.name)), ("duration_ns", .int(tolerance.sleepFor)),
                    ("tolerance_ns", figure.tolerance.map { .int($0.nanoseconds) } ?? .null),
                ]
                if let failed = figure.failed { m.append(("failed", .string(failed))) } else {
                    m.append(("late", figure.summary.json))
                }
                return .object(m)
            })),
            ("timers", .array(toleranceResult.wakeups.map { figure in
                var m: [(String, JSON)] = [
                    ("timers", .string(figure.name)), ("count", .int(Int64(tolerance.timers))),
                    ("tolerance_ns", .int(figure.toleranceNs)),
                ]
                if let failed = figure.failed { m.append(("failed", .string(failed))) } else {
                    m.append(("loop_wakeups", figure.loopWakeups.isEmpty ? .null : .number(median(figure.loopWakeups.map(Double.init)))))
                    m.append(("voluntary_ctx_switches_all_threads", .number(median(figure.contextSwitches.map(Double.init)))))
                    m.append(("voluntary_ctx_switches_main_thread", .number(median(figure.mainThreadSwitches.map(Double.init)))))
                    m.append(("late", Summary(figure.lateness).json))
                    m.append(("early", .int(Int64(figure.early))))
                }
                return .object(m)
            })),
        ])))
        var targets: [(String, JSON)] = []
        if let tk = timerKitRow(judgedSize), tk.failed == nil {
            targets.append(("schedule_invalidate", .object([
                ("limit_ns_per_pair", .number(BenchCommand.scheduleTargetNs)),
                ("judged_at_pending", .int(Int64(judgedSize))),
                ("ns_per_pair", .number(tk.pair.wallNs)),
                ("met", .bool(tk.pair.wallNs <= BenchCommand.scheduleTargetNs)),
            ])))
        }
        for result in latenessResults where result.sides[0].failed == nil && result.sides[1].failed == nil {
            let p50 = Double(result.sides[1].summary.p50) / Double(result.sides[0].summary.p50)
            let p99 = Double(result.sides[1].summary.p99) / Double(result.sides[0].summary.p99)
            targets.append(("lateness_\(result.period / 1_000_000)ms", .object([
                ("limit_ratio", .number(BenchCommand.latenessTargetRatio)),
                ("p50_ratio", .number(p50)), ("p99_ratio", .number(p99)),
                ("met", .bool(p50 <= BenchCommand.latenessTargetRatio && p99 <= BenchCommand.latenessTargetRatio)),
                ("enough_fires_to_judge", .bool(!quick)),
            ])))
        }
        members.append(("targets", .object(targets)))
        members.append(("failures", .array(failures.map { .string($0) })))
        return .object(members)
    }
}
