/// The cost of a Swift timer against the C core it is built on: schedule +
/// invalidate pairs and churn at 1k, 100k and 1M pending, the sides in one
/// run, repetitions alternating, in a program that does not interpose
/// malloc (timer-peers does, to count allocations, which puts a forwarding
/// call and a header in every allocation's path and so weighs on the side
/// that allocates).
public enum TimerCost {
    /// Runs two passes, each with its sides side by side: TimerKit against
    /// the C core (what the targets are measured on), then the C core
    /// against itself with each handle in a block of its own (the cost of one
    /// object per timer, in C). The text of the tables, and the failures.
    public static func run(quick: Bool, seed: UInt64) -> (text: String, failures: [String]) {
        var failures: [String] = []
        let config = ScheduleConfig(
            sizes: quick ? [1_000, 10_000] : [1_000, 100_000, 1_000_000],
            reps: quick ? 3 : 7,
            repTargetNs: quick ? 2_000_000 : 25_000_000)
        let standard = Array(ScheduleSideMaker.standard(quick: quick).prefix(2))
        let core = standard[1]
        let boxed = ScheduleSideMaker(name: CoreBoxedScheduleSide.sideName) { try CoreBoxedScheduleSide() }
        // Each pass alone, so that the sides of one pass hold no memory
        // during the other. Both passes draw their delays and victims from
        // the same seed and the same distributions (the draws themselves
        // differ, since batch sizes follow the timings).
        var rng = SeededGenerator(seed: seed)
        let swiftRows = ScheduleBench.run(config, makers: standard, mallocs: nil, rng: &rng, failures: &failures)
        rng = SeededGenerator(seed: seed)
        let boxRows = ScheduleBench.run(config, makers: [core, boxed], mallocs: nil, rng: &rng, failures: &failures)
        var out: [String] = []
        let machine = Machine.describe()
        out.append("timer-cost (seed \(seed)): \(machine.cpuModel), \(machine.processors) CPUs, Linux \(machine.kernel), load \(Machine.loadAverage())")
        out.append("ns per operation, median of \(config.reps) alternating reps; no malloc interposer in this program.")
        out.append("pair: schedule a timer and invalidate it; churn: schedule one and invalidate a random pending one.")
        out.append("")
        out.append("TimerKit against the C core, in one pass:")
        table(swiftRows, core: core.name, sizes: config.sizes, into: &out)
        out.append("")
        out.append("The cost of one object per timer, in C: the C core with each handle in a malloc'd block the")
        out.append("size of a LoopTimer, read back to cancel and freed, against the C core alone, in a second pass:")
        table(boxRows, core: core.name, sizes: config.sizes, into: &out)
        return (out.joined(separator: "\n"), failures)
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
