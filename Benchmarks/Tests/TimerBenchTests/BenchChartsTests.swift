import Foundation
import Testing

@testable import TimerBench

// The three charts of a run, drawn from a made-up report: what each shows,
// what it leaves out and says so, and that they are well-formed and the
// same for the same figures.

@Suite struct BenchChartsTests {
    /// A report with two sizes, two periods and two tolerances; a side with
    /// XML's special characters in its name, a failed side and a capped one.
    static func report() -> BenchReport {
        func row(_ side: String, _ pending: Int, pair: Double, churn: Double) -> ScheduleRow {
            var row = ScheduleRow(side: side, pending: pending)
            row.pair = OpFigure(wallNs: pair, reps: 3)
            row.churn = OpFigure(wallNs: churn, reps: 3)
            return row
        }
        var capped = ScheduleRow(side: "Foundation Timer+RunLoop", pending: 100_000)
        capped.skipped = "capped at 1000 pending: O(n)"
        var failed = ScheduleRow(side: "R&D <timer>", pending: 100_000)
        failed.failed = "refused"
        let rows = [
            row("TimerKit LoopTimer", 1_000, pair: 150, churn: 260),
            row("Foundation Timer+RunLoop", 1_000, pair: 2_100, churn: 2_300),
            row("R&D <timer>", 1_000, pair: 900, churn: 1_100),
            row("TimerKit LoopTimer", 100_000, pair: 160, churn: 780),
            capped, failed,
        ]
        func side(_ name: String, _ samples: [Int64]) -> LatenessSide {
            LatenessSide(name: name, samples: samples)
        }
        var broken = LatenessSide(name: "DispatchSourceTimer")
        broken.failed = "the source fired 0 of 5 times"
        let lateness = [
            LatenessResult(period: 1_000_000, fires: 5, sides: [
                side("TimerKit TimerLoop+LoopTimer", [40_000, 52_000, 61_000, 90_000, 150_000]),
                side("R&D <timer>", [-2_000, 0, 70_000, 80_000, 2_000_000]),
            ]),
            LatenessResult(period: 100_000_000, fires: 5, sides: [
                side("TimerKit TimerLoop+LoopTimer", [100_000, 120_000, 130_000]),
                side("R&D <timer>", [300_000, 310_000, 900_000]),
                broken,
            ]),
        ]
        func coalescing(_ name: String, _ fraction: Double, switches: Int64, wakeups: Int64?) -> CoalescingFigure {
            var figure = CoalescingFigure(name: name, fraction: fraction)
            figure.seconds = 2
            figure.fires = 50_000
            figure.allThreadSwitches = switches
            figure.loopWakeups = wakeups
            return figure
        }
        return BenchReport(
            length: .quick, seed: 7,
            machine: Machine(processors: 2, cpuModel: "Test CPU", kernel: "6.0", timerSlack: 50_000),
            elapsedNs: 1_000_000_000, load: ("0.1 0.1 0.1", "0.2 0.2 0.2"), countsMallocs: true,
            schedule: ScheduleConfig(sizes: [1_000, 100_000], reps: 3, repTargetNs: 1_000_000), scheduleRows: rows,
            lateness: LatenessConfig(periods: [1_000_000, 100_000_000], rounds: [1, 1], firesPerRound: [5, 5]),
            latenessResults: lateness, tolerance: ToleranceConfig(sleeps: 1), toleranceResult: ToleranceResult(sleeps: []),
            coalescing: CoalescingConfig(timers: 10_000, duration: 2_000_000_000),
            coalescingFigures: [
                coalescing("TimerKit TimerLoop", 0, switches: 30_000, wakeups: 30_400),
                coalescing("DispatchSourceTimer", 0, switches: 50_000, wakeups: nil),
                coalescing("TimerKit TimerLoop", 0.1, switches: 180, wakeups: 176),
                coalescing("DispatchSourceTimer", 0.1, switches: 0, wakeups: nil),
            ],
            clockFigures: [], failures: [])
    }

    @Test func aRunGivesThreeWellFormedChartsWithNoNaN() {
        let documents = BenchCharts.documents(BenchChartsTests.report())
        #expect(documents.map(\.name) == ["lateness-cdf.svg", "cost-vs-pending.svg", "wakeups-vs-tolerance.svg"])
        for (name, svg) in documents {
            #expect(xmlProblem(svg) == nil, "\(name): \(xmlProblem(svg) ?? "")")
            for number in coordinateNumbers(svg) {
                #expect(Double(number)?.isFinite == true, "\(name): not a finite number: \(number)")
            }
            #expect(!svg.contains("R&D <timer>"), "\(name) writes a name unescaped")
        }
    }

    @Test func theSameFiguresGiveTheSameCharts() {
        let first = BenchCharts.documents(BenchChartsTests.report())
        let second = BenchCharts.documents(BenchChartsTests.report())
        #expect(first.map(\.svg) == second.map(\.svg))
    }

    @Test func theLatenessChartHasAPanelAPeriodAndNotesWhatItCannotShow() {
        let chart = BenchCharts.latenessCDF(BenchChartsTests.report())
        #expect(chart.panels.map(\.title) == ["period 1 ms, 5 fires per round", "period 100 ms, 5 fires per round"])
        #expect(chart.panels.map { $0.series.map(\.name) } == [
            ["TimerKit TimerLoop+LoopTimer", "R&D <timer>"], ["TimerKit TimerLoop+LoopTimer", "R&D <timer>"],
        ])
        #expect(chart.panels.allSatisfy { $0.series.allSatisfy(\.steps) })
        // One x axis for every panel, covering every sample above zero.
        #expect(chart.panels.allSatisfy { $0.x.lower == 10_000 && $0.x.upper == 10_000_000 })
        #expect(chart.notes.contains { $0.contains("R&D <timer> at 1 ms: 2 of 5") })
        #expect(chart.notes.contains { $0.contains("FAILED, not drawn: DispatchSourceTimer at 100 ms") })
        let svg = chart.render()
        #expect(svg.contains("R&amp;D &lt;timer&gt;"))
        #expect(svg.components(separatedBy: "<path ").count - 1 == 4)
    }

    @Test func theCostChartNotesCappedAndFailedSides() {
        let chart = BenchCharts.costVsPending(BenchChartsTests.report())
        #expect(chart.panels.count == 2)
        let names = chart.panels[0].series.map(\.name)
        #expect(names == ["TimerKit LoopTimer", "Foundation Timer+RunLoop", "R&D <timer>"])
        #expect(chart.panels[0].series[0].points == [ChartPoint(x: 1_000, y: 150), ChartPoint(x: 100_000, y: 160)])
        #expect(chart.panels[1].series[0].points == [ChartPoint(x: 1_000, y: 260), ChartPoint(x: 100_000, y: 780)])
        #expect(chart.panels[0].series[1].points.count == 1)
        #expect(chart.notes.contains { $0.contains("Foundation Timer+RunLoop, 100000 pending: not measured") })
        #expect(chart.notes.contains { $0.contains("R&D <timer>, 100000 pending: FAILED (refused)") })
        #expect(chart.panels[0].x.lower == 1_000 && chart.panels[0].x.upper == 100_000)
    }

    @Test func theWakeupChartHasAContextSwitchLineForEverySideAndTheLoopsCount() {
        let chart = BenchCharts.wakeupsVsTolerance(BenchChartsTests.report())
        let series = chart.panels[0].series
        #expect(series.map(\.name) == [
            "TimerKit TimerLoop: context switches/s", "TimerKit TimerLoop: loop wake-ups/s",
            "DispatchSourceTimer: context switches/s",
        ])
        #expect(series[1].points == [ChartPoint(x: 0, y: 15_200), ChartPoint(x: 0.1, y: 88)])
        #expect(series[1].dashed && series[1].group == "TimerKit TimerLoop")
        #expect(chart.notes.contains("Timer fires per second, the same work on every side: 25000 in these runs."))
        // Zero context switches: no place on the log axis, and said so.
        #expect(chart.render().contains("Not drawn: 1 point at or below zero"))
    }

    @Test func cdfPointsAreTheSharesAtOrBelowEachValueAboveZero() {
        let points = BenchCharts.cdfPoints([30, -5, 10, 0, 40, 20, 20])
        #expect(points == [
            ChartPoint(x: 10, y: 2.0 / 7), ChartPoint(x: 10, y: 3.0 / 7), ChartPoint(x: 20, y: 5.0 / 7),
            ChartPoint(x: 30, y: 6.0 / 7), ChartPoint(x: 40, y: 1),
        ])
        #expect(BenchCharts.cdfPoints([0, -1]).isEmpty)
        let many = BenchCharts.cdfPoints((1...10_000).map { Int64($0) }, limit: 100)
        #expect(many.count == 101)
        #expect(many.last == ChartPoint(x: 10_000, y: 1))
        #expect(zip(many, many.dropFirst()).allSatisfy { $0.x <= $1.x && $0.y <= $1.y })
    }

    @Test func writeMakesTheDirectoryAndWritesTheDocuments() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("timerbench-charts-\(getpid())/nested").path
        defer { try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent) }
        let report = BenchChartsTests.report()
        let paths = try BenchCharts.write(report, to: directory)
        #expect(paths.map { ($0 as NSString).lastPathComponent } == BenchCharts.fileNames)
        for (path, document) in zip(paths, BenchCharts.documents(report)) {
            #expect(try String(contentsOfFile: path, encoding: .utf8) == document.svg)
        }
    }
}
