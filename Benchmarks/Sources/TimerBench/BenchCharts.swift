import Foundation

// The charts of a run (`timer-peers --charts DIR`): the lateness
// distribution of every peer, the cost of an operation against the number
// of pending timers, and wake-ups against tolerance, each an SVG file drawn
// from the figures the run printed.

/// The three charts of a benchmark run, as SVG documents.
enum BenchCharts {
    /// The files `write(_:to:)` writes, in order.
    static let fileNames = ["lateness-cdf.svg", "cost-vs-pending.svg", "wakeups-vs-tolerance.svg"]

    /// Most points drawn for one distribution; more samples are thinned to
    /// evenly spaced ranks.
    static let cdfPointLimit = 240

    /// Each chart's file name and text, in the order of `fileNames`.
    static func documents(_ report: BenchReport) -> [(name: String, svg: String)] {
        zip(fileNames, [latenessCDF(report), costVsPending(report), wakeupsVsTolerance(report)])
            .map { ($0, $1.render()) }
    }

    /// Writes the three charts into `directory` (made if missing); the paths
    /// written.
    static func write(_ report: BenchReport, to directory: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return try documents(report).map { name, svg in
            let path = (directory as NSString).appendingPathComponent(name)
            try svg.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
    }

    /// What was run where, under each chart's title.
    private static func subtitle(_ report: BenchReport) -> String {
        "timer-peers (\(report.length.rawValue), seed \(report.seed)); \(report.machine.processors) CPUs, \(report.machine.cpuModel), Linux \(report.machine.kernel)"
    }

    /// "a", "a and b", "a, b and c".
    static func spelledList(_ items: [String]) -> String {
        guard let last = items.last, items.count > 1 else { return items.first ?? "" }
        return items.dropLast().joined(separator: ", ") + " and " + last
    }

    // MARK: Lateness

    /// One panel per period: for each peer, the share of its fires (y) that
    /// were at most x late, x on a log axis shared by the panels.
    static func latenessCDF(_ report: BenchReport) -> SVGChart {
        let measured = report.latenessResults.map { result in
            (result, result.sides.filter { $0.failed == nil && !$0.samples.isEmpty })
        }
        let x = ChartAxis(
            title: "lateness: fire time − intended time (log scale)", scale: .log, unit: .nanoseconds,
            covering: measured.flatMap { $0.1.flatMap(\.samples) }.lazy.map(Double.init))
        let y = ChartAxis(title: "share of fires at most this late", scale: .linear, unit: .percent, lower: 0, upper: 1)
        var notes = [
            "Each line is one side's fires over all its rounds (the first \(report.lateness.discard == 1 ? "fire" : "\(report.lateness.discard) fires") of each round left out), read on the monotonic clock; further right is later.",
        ]
        var notShown: [String] = []
        var failed: [String] = []
        let panels = measured.map { result, sides in
            for side in result.sides {
                if let reason = side.failed { failed.append("\(side.name) at \(ChartUnit.nanoseconds.label(Double(result.period))): \(reason)") }
            }
            for side in sides {
                let atOrBelowZero = side.samples.count(where: { $0 <= 0 })
                if atOrBelowZero > 0 {
                    notShown.append("\(side.name) at \(ChartUnit.nanoseconds.label(Double(result.period))): \(atOrBelowZero) of \(side.samples.count)")
                }
            }
            return ChartPanel(
                title: "period \(ChartUnit.nanoseconds.label(Double(result.period))), \(result.fires) fires per round",
                x: x, y: y,
                series: sides.map { ChartSeries(name: $0.name, points: cdfPoints($0.samples), steps: true) })
        }
        if !notShown.isEmpty {
            notes.append("Fires early or exactly on time (lateness ≤ 0) have no place on the log axis; their line starts at their share instead: " + notShown.joined(separator: "; ") + ".")
        }
        if !failed.isEmpty { notes.append("FAILED, not drawn: " + failed.joined(separator: "; ") + ".") }
        return SVGChart(
            title: "Wake-up lateness of a repeating timer, distribution per side", subtitle: subtitle(report),
            panels: panels, notes: notes)
    }

    /// The empirical distribution of `samples` as the corners of a step
    /// function: a first point at the smallest sample above zero and the
    /// share of samples below it, then (value, share of samples at or below
    /// it) at evenly spaced ranks, the largest sample always included; at
    /// most `limit` + 1 points, none at or below zero (a log axis has no
    /// place for them).
    static func cdfPoints(_ samples: [Int64], limit: Int = cdfPointLimit) -> [ChartPoint] {
        let sorted = samples.sorted()
        guard let firstPositive = sorted.firstIndex(where: { $0 > 0 }), limit > 0 else { return [] }
        let count = sorted.count - firstPositive
        let points = min(count, limit)
        let start = ChartPoint(x: Double(sorted[firstPositive]), y: Double(firstPositive) / Double(sorted.count))
        var ranks: [Int] = []
        for k in 0..<points {
            let offset = points == 1 ? count - 1 : Int((Double(k) * Double(count - 1) / Double(points - 1)).rounded())
            let rank = firstPositive + offset
            // Of equal samples, the last: the share at or below that value.
            var last = rank
            while last + 1 < sorted.count && sorted[last + 1] == sorted[rank] { last += 1 }
            if ranks.last != last { ranks.append(last) }
        }
        return [start] + ranks.map { ChartPoint(x: Double(sorted[$0]), y: Double($0 + 1) / Double(sorted.count)) }
    }

    // MARK: Cost

    /// Wall time per operation against the number of pending timers, log-log,
    /// one panel for schedule + invalidate pairs and one for churn.
    static func costVsPending(_ report: BenchReport) -> SVGChart {
        let measured = report.scheduleRows.filter { $0.failed == nil && $0.skipped == nil }
        var names: [String] = []
        for row in report.scheduleRows where !names.contains(row.side) { names.append(row.side) }
        let x = ChartAxis(
            title: "pending timers (log scale)", scale: .log, unit: .count,
            covering: report.scheduleRows.map { Double($0.pending) })
        let y = ChartAxis(
            title: "wall time per operation (log scale)", scale: .log, unit: .nanoseconds,
            covering: measured.flatMap { [$0.pair.wallNs, $0.churn.wallNs] })
        func panel(_ title: String, _ figure: (ScheduleRow) -> OpFigure) -> ChartPanel {
            ChartPanel(title: title, x: x, y: y, series: names.map { name in
                ChartSeries(
                    name: name,
                    points: measured.filter { $0.side == name }.map {
                        ChartPoint(x: Double($0.pending), y: figure($0).wallNs)
                    },
                    markers: true)
            })
        }
        var notes = [
            "Delays 100–1000 s, so no timer fires and no loop runs; each point is the median of \(report.schedule.reps) timed repetitions, the sides alternating. Lower is cheaper.",
        ]
        if report.countsMallocs {
            notes.append("This program counts allocations: a malloc interposer is in the path of every allocation, a few ns on each (Benchmarks/README.md).")
        }
        for row in report.scheduleRows {
            if let skipped = row.skipped { notes.append("\(row.side), \(row.pending) pending: not measured (\(skipped)).") }
            if let failed = row.failed { notes.append("\(row.side), \(row.pending) pending: FAILED (\(failed)).") }
        }
        return SVGChart(
            title: "Cost of scheduling a one-shot timer, against timers pending", subtitle: subtitle(report),
            panels: [
                panel("schedule a timer, then invalidate it (a pair)", \.pair),
                panel("churn: schedule a timer, invalidate a random pending one", \.churn),
            ],
            notes: notes)
    }

    // MARK: Wake-ups

    /// Wake-ups per second against tolerance (a share of each timer's
    /// period) in the coalescing run: voluntary context switches of the
    /// process for every side, and the loop's own wake-up count where the
    /// side keeps one (dashed).
    static func wakeupsVsTolerance(_ report: BenchReport) -> SVGChart {
        let measured = report.coalescingFigures.filter { $0.failed == nil }
        var series: [ChartSeries] = []
        var names: [String] = []
        for figure in report.coalescingFigures where !names.contains(figure.name) { names.append(figure.name) }
        for name in names {
            let figures = measured.filter { $0.name == name }
            series.append(ChartSeries(
                name: "\(name): context switches/s",
                points: figures.map { ChartPoint(x: $0.fraction, y: $0.switchesPerSecond) }, group: name,
                markers: true))
            let counted = figures.compactMap { figure in
                figure.wakeupsPerSecond.map { ChartPoint(x: figure.fraction, y: $0) }
            }
            if !counted.isEmpty {
                series.append(ChartSeries(
                    name: "\(name): loop wake-ups/s", points: counted, group: name, dashed: true, markers: true))
            }
        }
        let x = ChartAxis(
            title: "tolerance (leeway), share of each timer's period", scale: .linear, unit: .percent,
            covering: report.coalescingFigures.map(\.fraction))
        let y = ChartAxis(
            title: "per second (log scale)", scale: .log, unit: .count,
            covering: series.flatMap(\.points).map(\.y))
        let coalescing = report.coalescing
        var notes = [
            "\(coalescing.timers) repeating timers, periods uniform in \(ChartUnit.nanoseconds.label(Double(coalescing.minPeriod)))–\(ChartUnit.nanoseconds.label(Double(coalescing.maxPeriod))), random phases, \(fixed(Double(coalescing.duration) / 1e9, 1)) s per run. Lower is fewer wake-ups for the same fires.",
            "Context switches: voluntary ones of the whole process (getrusage), the measure every side has; Dispatch keeps no wake-up count. Loop wake-ups (dashed): the TimerLoop's own counter.",
            "Measured at \(spelledList(report.coalescing.fractions.map { ChartUnit.percent.label($0) })) tolerance (the dots); the lines only join them.",
        ]
        let fires = measured.map(\.firesPerSecond).filter(\.isFinite)
        if let least = fires.min(), let most = fires.max() {
            notes.append("Timer fires per second, the same work on every side: \(fixed(least, 0))\(most > least ? "–\(fixed(most, 0))" : "") in these runs.")
        }
        for figure in report.coalescingFigures {
            if let failed = figure.failed {
                notes.append("\(figure.name) at \(ChartUnit.percent.label(figure.fraction)): FAILED (\(failed)).")
            }
        }
        return SVGChart(
            title: "Wake-ups per second against tolerance", subtitle: subtitle(report),
            panels: [ChartPanel(title: nil, x: x, y: y, series: series)], notes: notes)
    }
}
