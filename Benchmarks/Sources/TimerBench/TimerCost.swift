/// The cost of a Swift timer against the C core it is built on: schedule +
/// invalidate pairs and churn at 1k, 100k and 1M pending, the sides in one
/// run, repetitions alternating, in a program that does not interpose
/// malloc (timer-peers does, to count allocations, which puts a forwarding
/// call and a header in every allocation's path and so weighs on the side
/// that allocates).
public enum TimerCost {
    /// Runs one pass with five sides side by side, their repetitions
    /// alternating: TimerKit's `LoopTimer`, the C core (what the targets are
    /// measured on), the C core with each handle in an object of its own (a
    /// Swift object the loop keeps alive, as it keeps a `LoopTimer`: the
    /// least a Swift API that keeps a handle in one object per timer costs;
    /// a `LoopTimer` keeps the core's record instead; and a malloc'd block,
    /// the same in C), and TimerKit's `TimerCallbacks`, with no object per
    /// timer. The text of the table, the failures, and the figures the cost
    /// targets (judged on the `LoopTimer`) are judged on.
    public static func run(quick: Bool, seed: UInt64)
        -> (text: String, failures: [String], figures: CostTargets.Figures)
    {
        var failures: [String] = []
        let config = ScheduleConfig(
            sizes: sizes(quick: quick),
            reps: quick ? 3 : 21,
            repTargetNs: quick ? 2_000_000 : 25_000_000)
        let standard = Array(ScheduleSideMaker.standard(quick: quick).prefix(2))
        let (timerKit, core) = (standard[0], standard[1])
        let object = ScheduleSideMaker(name: CoreObjectScheduleSide.sideName) { try CoreObjectScheduleSide() }
        let boxed = ScheduleSideMaker(name: CoreBoxedScheduleSide.sideName) { try CoreBoxedScheduleSide() }
        let callbacks = ScheduleSideMaker(name: TimerKitCallbacksScheduleSide.sideName) {
            try TimerKitCallbacksScheduleSide()
        }
        var rng = SeededGenerator(seed: seed)
        let rows = ScheduleBench.run(
            config, makers: [timerKit, core, object, boxed, callbacks], mallocs: nil, rng: &rng,
            failures: &failures)
        var out: [String] = []
        let machine = Machine.describe()
        out.append("timer-cost (seed \(seed)): \(machine.cpuModel), \(machine.processors) CPUs, Linux \(machine.kernel), load \(Machine.loadAverage())")
        out.append("ns per operation, median of \(config.reps) alternating reps; no malloc interposer in this program.")
        out.append("pair: schedule a timer and invalidate it; churn: schedule one and invalidate a random pending one.")
        out.append("The C core + ... sides keep each handle in an object of their own, 136 bytes like a LoopTimer,")
        out.append("read back to cancel and then freed: a Swift object that the loop keeps alive while its timer is")
        out.append("scheduled, as it keeps a LoopTimer, and a malloc'd block. A LoopTimer keeps the core's record")
        out.append("of its timer in itself (tk_loop_schedule_record) and cancels by it (tk_loop_cancel_record):")
        out.append("a cancel reads the record and not the table's entry for the timer.")
        out.append("TimerKit TimerCallbacks schedules with no object per timer: one handler, each timer a value.")
        out.append("")
        table(rows, core: core.name, sizes: config.sizes, into: &out)
        out.append("")
        out.append("A LoopTimer against a handle in one Swift object per timer (\(timerKit.name) / \(object.name)):")
        for size in config.sizes {
            let sized = rows.filter { $0.pending == size && $0.failed == nil }
            guard let mine = sized.first(where: { $0.side == timerKit.name }),
                let floor = sized.first(where: { $0.side == object.name })
            else { continue }
            func added(_ a: Double, _ b: Double) -> String {
                "\(ratio(a, b)) (\(a >= b ? "+" : "")\(fixed(a - b, 0)) ns)"
            }
            out.append(pad("", 2) + pad("\(size) pending:", 17) + "pair " + added(mine.pair.wallNs, floor.pair.wallNs)
                + ", churn " + added(mine.churn.wallNs, floor.churn.wallNs))
        }
        out.append("")
        out += CostTargets.lines(rows: rows, timerKit: timerKit.name, core: core.name, sizes: config.sizes)
        let figures = CostTargets.Figures(rows: rows, timerKit: timerKit.name, core: core.name)
        return (out.joined(separator: "\n"), failures, figures)
    }

    /// The numbers of pending timers a run measures.
    public static func sizes(quick: Bool) -> [Int] {
        quick ? [1_000, 10_000] : [1_000, 100_000, 1_000_000]
    }

    /// One line of a run's figures: "  seed 7: pair/C 1.80x, 1.98x, 1.98x;
    /// pair at 100000 120 ns; churn/C at 1000000 1.62x" ("-" for a figure
    /// the run lacks).
    public static func runLine(seed: UInt64, _ figures: CostTargets.Figures, sizes: [Int]) -> String {
        let pairs = sizes.map { size in figures.pairRatio[size].map { fixed($0, 2) + "x" } ?? "-" }
        let pairNs = figures.pairNs[CostTargets.pairNsPending].map { fixed($0, 0) + " ns" } ?? "-"
        let churn = figures.churnRatio[CostTargets.churnPending].map { fixed($0, 2) + "x" } ?? "-"
        return "  seed \(seed): pair/C " + pairs.joined(separator: ", ")
            + "; pair at \(CostTargets.pairNsPending) \(pairNs); churn/C at \(CostTargets.churnPending) \(churn)"
    }

    private static func table(_ rows: [ScheduleRow], core coreName: String, sizes: [Int], into out: inout [String]) {
        out.append(pad("side", 32) + pad("pending", 9, right: true) + pad("pair", 8, right: true)
            + pad("churn", 8, right: true) + pad("pair/C", 8, right: true) + pad("churn/C", 9, right: true))
        for size in sizes {
            let sized = rows.filter { $0.pending == size }
            let core = sized.first { $0.side == coreName }
            for row in sized {
                var line = pad(row.side, 32) + pad("\(size)", 9, right: true)
                if let failed = row.failed {
                    out.append(line + "  FAILED: \(failed)")
                    continue
                }
                line += pad(fixed(row.pair.wallNs, 0), 8, right: true)
                line += pad(fixed(row.churn.wallNs, 0), 8, right: true)
                line += pad(ratio(row.pair.wallNs, core?.pair.wallNs ?? .nan), 8, right: true)
                line += pad(ratio(row.churn.wallNs, core?.churn.wallNs ?? .nan), 9, right: true)
                out.append(line)
            }
        }
    }
}
