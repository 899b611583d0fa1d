/// The cost of a Swift timer against the C core it is built on: schedule +
/// invalidate pairs and churn at 1k, 100k and 1M pending, both sides in one
/// run, repetitions alternating, in a program that does not interpose
/// malloc (timer-peers does, to count allocations, which puts a forwarding
/// call and a header in every allocation's path and so weighs on the side
/// that allocates).
public enum TimerCost {
    /// Runs the two sides; the text of the table, and the failures.
    public static func run(quick: Bool, seed: UInt64) -> (text: String, failures: [String]) {
        var rng = SeededGenerator(seed: seed)
        var failures: [String] = []
        let config = ScheduleConfig(
            sizes: quick ? [1_000, 10_000] : [1_000, 100_000, 1_000_000],
            reps: quick ? 3 : 7,
            repTargetNs: quick ? 2_000_000 : 25_000_000)
        let makers = Array(ScheduleSideMaker.standard(quick: quick).prefix(2))
        let rows = ScheduleBench.run(config, makers: makers, mallocs: nil, rng: &rng, failures: &failures)
        var out: [String] = []
        let machine = Machine.describe()
        out.append("timer-cost (seed \(seed)): \(machine.cpuModel), \(machine.processors) CPUs, Linux \(machine.kernel), load \(Machine.loadAverage())")
        out.append("ns per operation, median of \(config.reps) alternating reps; no malloc interposer in this program.")
        out.append("pair: schedule a timer and invalidate it; churn: schedule one and invalidate a random pending one.")
        out.append("")
        out.append(pad("side", 32) + pad("pending", 9, right: true) + pad("pair", 8, right: true)
            + pad("churn", 8, right: true) + pad("pair/C", 8, right: true) + pad("churn/C", 9, right: true))
        for size in config.sizes {
            let sized = rows.filter { $0.pending == size }
            let core = sized.first { $0.side.hasPrefix("C core") }
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
        return (out.joined(separator: "\n"), failures)
    }
}
