import Foundation

/// The figures of one run, as a table or as JSON.
struct BenchReport {
    var length: BenchCommand.Length
    var seed: UInt64
    var machine: Machine
    var elapsedNs: Int64
    /// The load averages before and after the run.
    var load: (before: String, after: String)
    var countsMallocs: Bool
    var schedule: ScheduleConfig
    var scheduleRows: [ScheduleRow]
    var lateness: LatenessConfig
    var latenessResults: [LatenessResult]
    var tolerance: ToleranceConfig
    var toleranceResult: ToleranceResult
    var coalescing: CoalescingConfig
    var coalescingFigures: [CoalescingFigure]
    var clockFigures: [ClockReadFigure]
    var failures: [String]

    private var quick: Bool { length == .quick }

    private func timerKitRow(_ pending: Int) -> ScheduleRow? {
        scheduleRows.first { $0.pending == pending && $0.side.hasPrefix("TimerKit") }
    }

    /// The size the schedule target is judged at: the target size when it
    /// was measured, else the largest.
    private var judgedSize: Int {
        schedule.sizes.contains(BenchCommand.scheduleTargetPending)
            ? BenchCommand.scheduleTargetPending : (schedule.sizes.max() ?? 0)
    }

    /// The lateness side of a result by name prefix.
    private func side(_ result: LatenessResult, _ prefix: String) -> LatenessSide? {
        result.sides.first { $0.name.hasPrefix(prefix) && $0.failed == nil }
    }

    // MARK: Text

    var text: String {
        var out: [String] = []
        out.append("timer-peers (\(length.rawValue), seed \(seed))")
        out.append("machine: \(machine.processors) CPUs, \(machine.cpuModel), Linux \(machine.kernel); timer slack \(machine.timerSlack) ns; run took \(fixed(Double(elapsedNs) / 1e9, 1)) s")
        out.append("load average (1/5/15 min): \(load.before) before, \(load.after) after")
        out.append("ratios: a peer's figure divided by TimerKit's (or the named reference); above 1.00x TimerKit is ahead.")
        out.append("")
        scheduleText(&out)
        latenessText(&out)
        toleranceText(&out)
        coalescingText(&out)
        clockText(&out)
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
        out.append("   wall = elapsed time per op; cpu = CPU time of the whole process (all threads) per op.")
        out.append("   B/timer: resident memory added by scheduling the n pending timers, per timer (RSS delta; from 100k pending).")
        if countsMallocs {
            out.append("   mallocs: allocations per pending timer while filling, and per schedule+invalidate pair when warm.")
        } else {
            out.append("   (allocations are counted by Benchmarks/, which interposes malloc)")
        }
        out.append("")
        var header = "   " + pad("side", 32) + pad("pending", 8, right: true) + pad("pair", 9, right: true)
            + pad("cpu", 9, right: true) + pad("churn", 10, right: true) + pad("cpu", 10, right: true)
            + pad("pair/TK", 9, right: true) + pad("churn/TK", 10, right: true) + pad("B/timer", 9, right: true)
        if countsMallocs { header += pad("mallocs", 9, right: true) + pad("/pair", 7, right: true) }
        out.append(header)
        var lastSize = -1
        for row in scheduleRows {
            if row.pending != lastSize && lastSize != -1 { out.append("") }
            lastSize = row.pending
            var line = "   " + pad(row.side, 32) + pad(String(row.pending), 8, right: true)
            if let skipped = row.skipped {
                out.append(line + "   not measured: \(skipped)")
                continue
            }
            if let failed = row.failed {
                out.append(line + "   FAILED: \(failed)")
                continue
            }
            let tk = timerKitRow(row.pending)
            line += pad(fixed(row.pair.wallNs, 0), 9, right: true)
            line += pad(fixed(row.pair.cpuNs, 0), 9, right: true)
            line += pad(fixed(row.churn.wallNs, 0), 10, right: true)
            line += pad(fixed(row.churn.cpuNs, 0), 10, right: true)
            line += pad(ratio(row.pair.wallNs, tk?.pair.wallNs ?? .nan), 9, right: true)
            line += pad(ratio(row.churn.wallNs, tk?.churn.wallNs ?? .nan), 10, right: true)
            line += pad(fixed(row.bytesPerTimer, 0), 9, right: true)
            if countsMallocs {
                line += pad(fixed(row.mallocsPerFill, 2), 9, right: true) + pad(fixed(row.mallocsPerPair, 2), 7, right: true)
            }
            out.append(line)
        }
        out.append("")
    }

    private func latenessText(_ out: inout [String]) {
        out.append("2. Wake-up lateness of a repeating timer, us (fire time - intended time, read on the monotonic clock;")
        out.append("   Task.sleep on its own clock). Rounds of fires per side, the side order rotating each round; the first")
        out.append("   \(lateness.discard) fire of each round is left out on every side (so Foundation counts from its second fire), and one")
        out.append("   untimed warm-up round per side comes first. Whole periods that passed are skipped (\"skipped\").")
        out.append("   floor: one timerfd (absolute, repeating) and epoll_wait, in C. C loop: tk_loop_run with a C callback.")
        out.append("   TimerKit: TimerLoop.run + repeating LoopTimer. Foundation: Timer(timeInterval:repeats:block:) on RunLoop.current.")
        out.append("   Dispatch: repeating source, leeway 0, serial queue. Sleeping loops: a task sleeping to each grid instant in turn.")
        for result in latenessResults {
            out.append("")
            out.append("   period \(micros(result.period)) us, \(result.fires) fires per round")
            out.append("   " + pad("side", 36) + pad("fires", 6, right: true) + pad("p50", 8, right: true)
                + pad("p90", 8, right: true) + pad("p99", 8, right: true) + pad("max", 9, right: true)
                + pad("early", 6, right: true) + pad("skipped", 8, right: true)
                + pad("p50/floor", 10, right: true) + pad("p99/floor", 10, right: true)
                + pad("p50/TK", 8, right: true) + pad("p99/TK", 8, right: true))
            let floor = side(result, "bare timerfd")?.summary
            let tk = side(result, "TimerKit")?.summary
            for side in result.sides {
                var line = "   " + pad(side.name, 36)
                if let failed = side.failed {
                    out.append(line + "   FAILED: \(failed)")
                    continue
                }
                let s = side.summary
                line += pad(String(s.count), 6, right: true) + pad(micros(s.p50), 8, right: true)
                line += pad(micros(s.p90), 8, right: true) + pad(micros(s.p99), 8, right: true)
                line += pad(micros(s.max), 9, right: true)
                line += pad(String(side.early), 6, right: true) + pad(String(side.skipped), 8, right: true)
                line += pad(ratio(Double(s.p50), Double(floor?.p50 ?? 0)), 10, right: true)
                line += pad(ratio(Double(s.p99), Double(floor?.p99 ?? 0)), 10, right: true)
                line += pad(ratio(Double(s.p50), Double(tk?.p50 ?? 0)), 8, right: true)
                line += pad(ratio(Double(s.p99), Double(tk?.p99 ?? 0)), 8, right: true)
                out.append(line)
            }
            if let c = side(result, "C loop")?.summary, let swift = tk {
                out.append("   Swift/C: p50 \(ratio(Double(swift.p50), Double(c.p50))), p99 \(ratio(Double(swift.p99), Double(c.p99)))")
            }
            if !result.foundationFirstFire.isEmpty {
                let first = Summary(result.foundationFirstFire)
                let offsets = Summary(result.foundationFireDateOffset)
                out.append("   Foundation first fire after creation (Timer(timeInterval: \(micros(result.period)) us, repeats: true)): median \(micros(first.p50)) us, min \(micros(first.min)), max \(micros(first.max)) over \(first.count) timers; fireDate - creation time \(micros(offsets.p50)) us")
            }
        }
        out.append("")
    }

    private func toleranceText(_ out: inout [String]) {
        out.append("3a. Tolerance of one sleep: a \(micros(tolerance.sleepFor)) us sleep, \(tolerance.sleeps) of each kind interleaved: how much longer than \(micros(tolerance.sleepFor)) us it took, us")
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
    }

    private func coalescingText(_ out: inout [String]) {
        out.append("3b. Coalescing: \(coalescing.timers) repeating timers, periods uniform in [\(coalescing.minPeriod / 1_000_000), \(coalescing.maxPeriod / 1_000_000)] ms, random phases, \(fixed(Double(coalescing.duration) / 1e9, 1)) s per run;")
        out.append("   tolerance (Dispatch: leeway) 0 or a share of each timer's period. wakeups/s: TimerKit's own counter (Dispatch has")
        out.append("   none). ctx/s: voluntary context switches per second of the whole process (getrusage); loop ctx/s: the")
        out.append("   thread that runs the TimerLoop (/proc/self/status). Lateness = fire time - the timer's grid point, us.")
        out.append("   " + pad("side", 22) + pad("tolerance", 10, right: true) + pad("fires/s", 9, right: true)
            + pad("wakeups/s", 10, right: true) + pad("ctx/s", 8, right: true) + pad("loop ctx/s", 11, right: true)
            + pad("ctx/TK", 8, right: true) + pad("late p50", 9, right: true) + pad("p99", 9, right: true)
            + pad("max", 9, right: true) + pad("early", 6, right: true))
        for figure in coalescingFigures {
            var line = "   " + pad(figure.name, 22) + pad("\(Int(figure.fraction * 100))%", 10, right: true)
            if let failed = figure.failed {
                out.append(line + "   FAILED: \(failed)")
                continue
            }
            let tk = coalescingFigures.first {
                $0.name.hasPrefix("TimerKit") && $0.fraction == figure.fraction && $0.failed == nil
            }
            line += pad(fixed(figure.firesPerSecond, 0), 9, right: true)
            line += pad(figure.wakeupsPerSecond.map { fixed($0, 0) } ?? "-", 10, right: true)
            line += pad(fixed(figure.switchesPerSecond, 0), 8, right: true)
            line += pad(figure.loopThreadSwitches.map { fixed(Double($0) / figure.seconds, 0) } ?? "-", 11, right: true)
            line += pad(ratio(figure.switchesPerSecond, tk?.switchesPerSecond ?? .nan), 8, right: true)
            line += pad(micros(figure.lateness.p50), 9, right: true) + pad(micros(figure.lateness.p99), 9, right: true)
            line += pad(micros(figure.lateness.max), 9, right: true) + pad(String(figure.early), 6, right: true)
            out.append(line)
        }
        out.append("")
    }

    private func clockText(_ out: inout [String]) {
        let reference = clockFigures.first?.ns ?? .nan
        out.append("4. Clock reads, ns per read (median of the reps; ratio against \(clockFigures.first?.name ?? "-"))")
        for figure in clockFigures {
            out.append("   " + pad(figure.name, 42) + pad(fixed(figure.ns, 1), 8, right: true)
                + pad(ratio(figure.ns, reference), 9, right: true)
                + "   reps \(fixed(figure.fastest, 1))..\(fixed(figure.slowest, 1))")
        }
        out.append("")
    }

    private func targetsText(_ out: inout [String]) {
        out.append("Targets")
        if let tk = timerKitRow(judgedSize), tk.failed == nil {
            let met = tk.pair.wallNs <= BenchCommand.scheduleTargetNs
            out.append("   Swift schedule+invalidate <= \(fixed(BenchCommand.scheduleTargetNs, 0)) ns per pair at \(BenchCommand.scheduleTargetPending) pending: \(fixed(tk.pair.wallNs, 0)) ns per pair (churn \(fixed(tk.churn.wallNs, 0))) at \(judgedSize) pending -> \(met ? "MET" : "NOT MET")\(judgedSize != BenchCommand.scheduleTargetPending ? " (judged at \(judgedSize), not the target size)" : "")")
            if let core = scheduleRows.first(where: { $0.pending == judgedSize && $0.side.hasPrefix("C core") }),
                core.failed == nil
            {
                out.append("      the C core alone: \(fixed(core.pair.wallNs, 0)) ns per pair; the Swift facade adds \(fixed(tk.pair.wallNs - core.pair.wallNs, 0)) ns per pair")
            }
        } else {
            out.append("   Swift schedule+invalidate: not measured (FAILED)")
        }
        // Judged at the short periods, where the loop's own overhead shows.
        for result in latenessResults where result.period <= BenchCommand.latenessTargetMaxPeriod {
            guard let c = side(result, "C loop"), let swift = side(result, "TimerKit") else {
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
            ("length", .string(length.rawValue)), ("seed", .string(String(seed))),
            ("machine", .object([
                ("nproc", .int(Int64(machine.processors))), ("cpu", .string(machine.cpuModel)),
                ("kernel", .string(machine.kernel)), ("timer_slack_ns", .int(machine.timerSlack)),
                ("load_before", .string(load.before)), ("load_after", .string(load.after)),
            ])),
            ("elapsed_s", .number(Double(elapsedNs) / 1e9)),
        ]
        members.append(("schedule", .object([
            ("delay_range_ns", .array([.int(schedule.minDelay), .int(schedule.maxDelay)])),
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
                    m.append(("rss_bytes_per_timer", .number(row.bytesPerTimer)))
                    m.append(("mallocs_per_pending_timer", .number(row.mallocsPerFill)))
                    m.append(("mallocs_per_pair", .number(row.mallocsPerPair)))
                }
                return .object(m)
            })),
        ])))
        members.append(("lateness", .array(latenessResults.map { result in
            let floor = side(result, "bare timerfd")?.summary
            let tk = side(result, "TimerKit")?.summary
            var m: [(String, JSON)] = [
                ("period_ns", .int(result.period)), ("fires_per_round", .int(Int64(result.fires))),
                ("discarded_per_round", .int(Int64(lateness.discard))),
                ("sides", .array(result.sides.map { side in
                    var s: [(String, JSON)] = [("side", .string(side.name))]
                    if let failed = side.failed {
                        s.append(("failed", .string(failed)))
                    } else {
                        s.append(("lateness", side.summary.json))
                        s.append(("early", .int(Int64(side.early))))
                        s.append(("skipped", .int(side.skipped)))
                        s.append(("p50_vs_floor", .number(Double(side.summary.p50) / Double(floor?.p50 ?? 0))))
                        s.append(("p99_vs_floor", .number(Double(side.summary.p99) / Double(floor?.p99 ?? 0))))
                        s.append(("p50_vs_timerkit", .number(Double(side.summary.p50) / Double(tk?.p50 ?? 0))))
                        s.append(("p99_vs_timerkit", .number(Double(side.summary.p99) / Double(tk?.p99 ?? 0))))
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
        members.append(("tolerance_sleeps", .array(toleranceResult.sleeps.map { figure in
            var m: [(String, JSON)] = [
                ("sleep", .string(figure.name)), ("duration_ns", .int(tolerance.sleepFor)),
                ("tolerance_ns", figure.tolerance.map { .int($0.nanoseconds) } ?? .null),
            ]
            if let failed = figure.failed { m.append(("failed", .string(failed))) } else {
                m.append(("late", figure.summary.json))
            }
            return .object(m)
        })))
        members.append(("coalescing", .object([
            ("timers", .int(Int64(coalescing.timers))),
            ("period_range_ns", .array([.int(coalescing.minPeriod), .int(coalescing.maxPeriod)])),
            ("runs", .array(coalescingFigures.map { figure in
                var m: [(String, JSON)] = [
                    ("side", .string(figure.name)), ("tolerance_share_of_period", .number(figure.fraction)),
                ]
                if let failed = figure.failed { m.append(("failed", .string(failed))) } else {
                    m.append(("seconds", .number(figure.seconds)))
                    m.append(("fires_per_s", .number(figure.firesPerSecond)))
                    m.append(("loop_wakeups_per_s", figure.wakeupsPerSecond.map { .number($0) } ?? .null))
                    m.append(("voluntary_ctx_switches_per_s_all_threads", .number(figure.switchesPerSecond)))
                    m.append(("voluntary_ctx_switches_per_s_loop_thread",
                        figure.loopThreadSwitches.map { .number(Double($0) / figure.seconds) } ?? .null))
                    m.append(("late", figure.lateness.json))
                    m.append(("early", .int(Int64(figure.early))))
                }
                return .object(m)
            })),
        ])))
        members.append(("clock_reads", .array(clockFigures.map { figure in
            .object([
                ("clock", .string(figure.name)), ("ns_per_read", .number(figure.ns)),
                ("fastest_rep_ns", .number(figure.fastest)), ("slowest_rep_ns", .number(figure.slowest)),
                ("reads_per_rep", .int(Int64(figure.reads))),
            ])
        })))
        var targets: [(String, JSON)] = []
        if let tk = timerKitRow(judgedSize), tk.failed == nil {
            targets.append(("schedule_invalidate", .object([
                ("limit_ns_per_pair", .number(BenchCommand.scheduleTargetNs)),
                ("judged_at_pending", .int(Int64(judgedSize))),
                ("ns_per_pair", .number(tk.pair.wallNs)),
                ("met", .bool(tk.pair.wallNs <= BenchCommand.scheduleTargetNs)),
            ])))
        }
        for result in latenessResults where result.period <= BenchCommand.latenessTargetMaxPeriod {
            guard let c = side(result, "C loop"), let swift = side(result, "TimerKit") else { continue }
            let p50 = Double(swift.summary.p50) / Double(c.summary.p50)
            let p99 = Double(swift.summary.p99) / Double(c.summary.p99)
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
