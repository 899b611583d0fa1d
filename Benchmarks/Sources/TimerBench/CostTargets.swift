/// The targets a `LoopTimer`'s cost is held to against the C core it is
/// built on, judged on `timer-cost` runs:
///
/// - a schedule + invalidate pair at most 2× the C core's, at every number
///   of pending timers measured;
/// - a pair at most 120 ns at 100k pending;
/// - churn (schedule one, invalidate a random pending one) at most 1.5× the
///   C core's at 1M pending.
///
/// In one run, a ratio is the `LoopTimer`'s median over the C core's, as in
/// the table. Beside it come the lower and upper quartile of the rep-by-rep
/// ratios: rep r of both sides ran in the same round, close in time, so their
/// spread shows how far the machine's noise reaches within the run. Separate
/// runs differ by more than that, since each process lays out its memory
/// anew; over several runs a target is judged on the median of the runs'
/// figures. A verdict compares the figure, not its rounded text.
public enum CostTargets {
    static let pairRatio = 2.0
    static let pairNs = 120.0
    static let pairNsPending = 100_000
    static let churnRatio = 1.5
    static let churnPending = 1_000_000

    /// What one run measured of the targets, by number of pending timers.
    public struct Figures: Equatable, Sendable {
        /// The `LoopTimer`'s pair over the C core's.
        var pairRatio: [Int: Double] = [:]
        /// The `LoopTimer`'s pair, ns.
        var pairNs: [Int: Double] = [:]
        /// The `LoopTimer`'s churn over the C core's.
        var churnRatio: [Int: Double] = [:]

        init() {}

        /// The figures of `rows`; a size where either side failed has none.
        init(rows: [ScheduleRow], timerKit: String, core: String) {
            for mine in rows where mine.side == timerKit && mine.measured {
                guard let floor = rows.first(where: { $0.side == core && $0.pending == mine.pending && $0.measured })
                else { continue }
                pairRatio[mine.pending] = mine.pair.wallNs / floor.pair.wallNs
                pairNs[mine.pending] = mine.pair.wallNs
                churnRatio[mine.pending] = mine.churn.wallNs / floor.churn.wallNs
            }
        }

        /// One line, "pair_ratio@1000=1.8 pair_ns@1000=104 ...", which
        /// ``init(decoding:)`` reads back: how a run in a process of its
        /// own hands its figures over.
        public var encoded: String {
            var fields: [String] = []
            for (name, values) in [("pair_ratio", pairRatio), ("pair_ns", pairNs), ("churn_ratio", churnRatio)] {
                for size in values.keys.sorted() { fields.append("\(name)@\(size)=\(values[size]!)") }
            }
            return fields.joined(separator: " ")
        }

        /// The figures of an ``encoded`` line, or nil if it is not one.
        public init?(decoding line: Substring) {
            for field in line.split(separator: " ") {
                let parts = field.split(separator: "=")
                guard parts.count == 2, let value = Double(parts[1]) else { return nil }
                let key = parts[0].split(separator: "@")
                guard key.count == 2, let size = Int(key[1]), size > 0 else { return nil }
                switch key[0] {
                case "pair_ratio": pairRatio[size] = value
                case "pair_ns": pairNs[size] = value
                case "churn_ratio": churnRatio[size] = value
                default: return nil
                }
            }
        }
    }

    /// The lines that judge each target on one run's `rows` of `timerKit`
    /// and `core` at `sizes`, each ratio with the spread of its reps.
    static func lines(rows: [ScheduleRow], timerKit: String, core: String, sizes: [Int]) -> [String] {
        func figure(_ side: String, _ size: Int) -> ScheduleRow? {
            rows.first { $0.side == side && $0.pending == size && $0.measured }
        }
        let figures = Figures(rows: rows, timerKit: timerKit, core: core)
        var cells: [String] = []
        var measured: [Double] = []
        for size in sizes {
            guard let value = figures.pairRatio[size], let mine = figure(timerKit, size), let floor = figure(core, size)
            else {
                cells.append("- at \(size)")
                continue
            }
            measured.append(value)
            cells.append("\(fixed(value, 2))x \(spread(mine.pair, floor.pair)) at \(size)")
        }
        // Judged on the highest ratio: one size over the target is enough to
        // miss it, even if another was not measured.
        let highest = measured.max()
        let pair: Judged
        if let highest, measured.count == sizes.count || highest > pairRatio {
            pair = .value(highest, "the highest \(fixed(highest, 3))x")
        } else {
            pair = .notJudged("a side failed")
        }
        return judge(
            header: "Targets in this run (\(timerKit) against \(core); in brackets, the lower and upper quartile of the rep-by-rep ratios):",
            sizes: sizes, pairCells: cells, pair: pair,
            pairTime: figures.pairNs[pairNsPending].map { ($0, "\(fixed($0, 1)) ns") },
            churnRatio: {
                guard let value = figures.churnRatio[churnPending], let mine = figure(timerKit, churnPending),
                    let floor = figure(core, churnPending)
                else { return nil }
                return (value, "\(fixed(value, 3))x \(spread(mine.churn, floor.churn))")
            }())
    }

    /// The lines that judge each target on the median of several runs'
    /// figures, each with the runs' range; a figure is judged only if every
    /// run has it. The pair target, which must hold at every size, is judged
    /// on each run's highest ratio, so that runs each over it at a different
    /// size cannot pass it together.
    public static func lines(runs: [Figures], sizes: [Int]) -> [String] {
        func summary(_ values: [Double?], digits: Int, unit: String) -> (Double, String)? {
            let measured = values.compactMap { $0 }
            guard !measured.isEmpty, measured.count == values.count else { return nil }
            let middle = median(measured)
            return (middle, "\(fixed(middle, digits))\(unit) [\(fixed(measured.min()!, digits))-\(fixed(measured.max()!, digits))]")
        }
        let cells = sizes.map { size in
            (summary(runs.map { $0.pairRatio[size] }, digits: 2, unit: "x")?.1 ?? "-") + " at \(size)"
        }
        let highest = runs.map { run -> Double? in
            let values = sizes.compactMap { run.pairRatio[$0] }
            return values.count == sizes.count ? values.max() : nil
        }
        let pair: Judged = summary(highest, digits: 3, unit: "x").map { .value($0.0, "each run's highest " + $0.1) }
            ?? .notJudged("a side failed")
        return judge(
            header: "Targets over the \(runs.count) runs (the median of the runs' figures; in brackets, the lowest and the highest):",
            sizes: sizes, pairCells: cells, pair: sizes.isEmpty ? .notJudged("no size measured") : pair,
            pairTime: summary(runs.map { $0.pairNs[pairNsPending] }, digits: 1, unit: " ns"),
            churnRatio: summary(runs.map { $0.churnRatio[churnPending] }, digits: 3, unit: "x"))
    }

    /// A figure a target is judged on, and its text; or why there is none.
    private enum Judged {
        case value(Double, String)
        case notJudged(String)
    }

    /// The three target lines under `header`: the pair target's cells by
    /// size and the figure it is judged on, then the pair in ns and the
    /// churn ratio with their texts (nil: not measured). A verdict compares
    /// the figure itself, not the rounded text.
    private static func judge(
        header: String, sizes: [Int], pairCells: [String], pair: Judged,
        pairTime: (Double, String)?, churnRatio churn: (Double, String)?
    ) -> [String] {
        var out = [header]
        let pairVerdict: String
        switch pair {
        case .value(let value, let text): pairVerdict = "; " + text + " -> " + verdict(value <= pairRatio, nil)
        case .notJudged(let why): pairVerdict = " -> " + verdict(false, why)
        }
        out.append("  pair <= \(fixed(pairRatio, 1))x the C core's at each size: " + pairCells.joined(separator: ", ")
            + pairVerdict)
        let timeVerdict = pairTime.map { $0.1 + " -> " + verdict($0.0 <= pairNs, nil) }
            ?? "-> " + verdict(false, notMeasured(pairNsPending, sizes))
        out.append("  pair <= \(fixed(pairNs, 0)) ns at \(pairNsPending) pending: " + timeVerdict)
        let churnVerdict = churn.map { $0.1 + " -> " + verdict($0.0 <= churnRatio, nil) }
            ?? "-> " + verdict(false, notMeasured(churnPending, sizes))
        out.append("  churn <= \(fixed(churnRatio, 1))x the C core's at \(churnPending) pending: " + churnVerdict)
        return out
    }

    /// "[low-high]": the lower and upper quartile of the ratios of `mine`'s
    /// reps to `floor`'s, rep r to rep r; "[-]" with no pair of reps.
    static func spread(_ mine: OpFigure, _ floor: OpFigure) -> String {
        guard let (low, high) = quartiles(ratios(mine.repNs, floor.repNs)) else { return "[-]" }
        return "[\(fixed(low, 2))-\(fixed(high, 2))]"
    }

    /// The ratios `mine[r] / floor[r]`, for the reps both have.
    static func ratios(_ mine: [Double], _ floor: [Double]) -> [Double] {
        zip(mine, floor).compactMap { a, b in
            let value = a / b
            return value.isFinite && b > 0 ? value : nil
        }
    }

    /// The lower and upper quartile (nearest rank), or nil for no values.
    static func quartiles(_ values: [Double]) -> (Double, Double)? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        func rank(_ q: Double) -> Double {
            let index = Int((q * Double(sorted.count)).rounded(.up))
            return sorted[min(max(index, 1), sorted.count) - 1]
        }
        return (rank(0.25), rank(0.75))
    }

    /// "MET" or "NOT MET", or why the target was not judged.
    private static func verdict(_ met: Bool, _ notJudged: String?) -> String {
        if let notJudged { return "not judged (\(notJudged))" }
        return met ? "MET" : "NOT MET"
    }

    private static func notMeasured(_ size: Int, _ sizes: [Int]) -> String {
        sizes.contains(size) ? "a side failed" : "measured at \(sizes.map(String.init).joined(separator: ", ")) pending only"
    }
}

extension ScheduleRow {
    /// Whether the row has figures: its side was neither capped nor failed.
    var measured: Bool { failed == nil && skipped == nil }
}
