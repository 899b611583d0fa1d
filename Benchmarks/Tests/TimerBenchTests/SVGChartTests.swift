import Testing

@testable import TimerBench

// The SVG writer of the charts: axes and their ticks, escaping, points with
// no place on a log axis, and well-formed, repeatable output.

@Suite struct ChartAxisTests {
    @Test func aLogAxisHasALabelledTickAtEachDecadeAndMinorTicksBetween() {
        let axis = ChartAxis(title: "t", scale: .log, unit: .nanoseconds, covering: [3, 4_500, 0, -7, .nan])
        #expect(axis.lower == 1 && axis.upper == 10_000)
        let major = axis.ticks.filter(\.major)
        #expect(major.map(\.value) == [1, 10, 100, 1_000, 10_000])
        #expect(major.map(\.label) == ["1 ns", "10 ns", "100 ns", "1 µs", "10 µs"])
        let minor = axis.ticks.filter { !$0.major }
        #expect(minor.count == 4 * 8)
        #expect(minor.allSatisfy { $0.label == nil })
        #expect(minor.first?.value == 2 && minor.last?.value == 9_000)
        #expect(axis.ticks.map(\.value) == axis.ticks.map(\.value).sorted())
    }

    @Test func aWideLogAxisLabelsFewerDecades() {
        let axis = ChartAxis(title: "n", scale: .log, unit: .count, covering: [1, 1e12])
        let major = axis.ticks.filter(\.major)
        #expect(major.count == 13)
        #expect(major.compactMap(\.label) == ["1", "100", "10k", "1M", "100M", "10G", "1T"])
    }

    @Test func aLogAxisOverOneValueOrNoneSpansADecade() {
        let one = ChartAxis(title: "", scale: .log, unit: .count, covering: [1_000])
        #expect(one.lower == 1_000 && one.upper == 10_000)
        let none = ChartAxis(title: "", scale: .log, unit: .count, covering: [0, -1, .infinity])
        #expect(none.lower == 1 && none.upper == 10)
        let given = ChartAxis(title: "", scale: .log, unit: .count, lower: -5, upper: 0)
        #expect(given.lower > 0 && given.upper > given.lower)
    }

    @Test func valuesWithNoPlaceOnALogAxisHaveNoPosition() throws {
        let axis = ChartAxis(title: "", scale: .log, unit: .nanoseconds, lower: 10, upper: 1_000)
        #expect(axis.position(0) == nil)
        #expect(axis.position(-5) == nil)
        #expect(axis.position(.nan) == nil)
        #expect(axis.position(.infinity) == nil)
        #expect(axis.position(10) == 0 && axis.position(1_000) == 1)
        #expect(abs(try #require(axis.position(100)) - 0.5) < 1e-12)
        // Outside the domain: clamped to the ends.
        #expect(axis.position(1e9) == 1 && axis.position(1) == 0)
    }

    @Test func aLinearAxisHasRoundSteps() {
        let share = ChartAxis(title: "", scale: .linear, unit: .percent, covering: [0, 0.1])
        #expect(share.lower == 0 && abs(share.upper - 0.1) < 1e-12)
        #expect(share.ticks.compactMap(\.label) == ["0%", "2%", "4%", "6%", "8%", "10%"])
        let counts = ChartAxis(title: "", scale: .linear, unit: .count, covering: [3, 47])
        #expect(counts.lower == 0 && counts.upper == 50)
        #expect(counts.ticks.map(\.value) == [0, 10, 20, 30, 40, 50])
        #expect(ChartAxis(title: "", scale: .linear, unit: .count, covering: [0.3]).ticks.count > 1)
    }

    @Test func labelsUseTheUnitsSuffixes() {
        #expect(ChartUnit.nanoseconds.label(250) == "250 ns")
        #expect(ChartUnit.nanoseconds.label(1_500) == "1.5 µs")
        #expect(ChartUnit.nanoseconds.label(2_500_000) == "2.5 ms")
        #expect(ChartUnit.nanoseconds.label(3e9) == "3 s")
        #expect(ChartUnit.nanoseconds.label(5_000e9) == "5000 s")
        #expect(ChartUnit.count.label(100_000) == "100k")
        #expect(ChartUnit.count.label(1_000_000) == "1M")
        #expect(ChartUnit.count.label(0) == "0")
        #expect(ChartUnit.percent.label(0.1) == "10%")
        #expect(ChartUnit.count.label(.nan) == "-")
    }
}

@Suite struct SVGChartTests {
    /// A one-panel chart, log-log.
    static func chart(_ series: [ChartSeries], title: String = "chart", notes: [String] = []) -> SVGChart {
        let values = series.flatMap(\.points)
        return SVGChart(
            title: title, subtitle: "a run", panels: [
                ChartPanel(
                    title: nil,
                    x: ChartAxis(title: "x", scale: .log, unit: .count, covering: values.map(\.x)),
                    y: ChartAxis(title: "y", scale: .log, unit: .nanoseconds, covering: values.map(\.y)),
                    series: series)
            ], notes: notes)
    }

    @Test func textIsEscaped() {
        #expect(SVGChart.escape(#"a<b & "c" 'd' >"#) == "a&lt;b &amp; &quot;c&quot; &apos;d&apos; &gt;")
        #expect(SVGChart.escape("bell\u{7}, tab\tend") == "bell, tab\tend")
        #expect(SVGChart.escape("µs – 10 %") == "µs – 10 %")
        let svg = SVGChartTests.chart(
            [ChartSeries(name: #"<NIO & "friends">"#, points: [ChartPoint(x: 1, y: 2), ChartPoint(x: 10, y: 20)])],
            title: "A < B", notes: ["R&D's note"]
        ).render()
        #expect(svg.contains("&lt;NIO &amp; &quot;friends&quot;&gt;"))
        #expect(svg.contains("<title>A &lt; B</title>"))
        #expect(svg.contains("R&amp;D&apos;s note"))
        #expect(!svg.contains("<NIO"))
        #expect(xmlProblem(svg) == nil)
    }

    @Test func pointsWithNoPlaceOnALogAxisAreLeftOutNotWrittenAsNaN() {
        let points = [
            ChartPoint(x: 0, y: 5), ChartPoint(x: 10, y: 20), ChartPoint(x: 20, y: 25),
            ChartPoint(x: 100, y: 0), ChartPoint(x: 1_000, y: 30), ChartPoint(x: 2_000, y: 35),
            ChartPoint(x: .nan, y: 1), ChartPoint(x: -3, y: 7), ChartPoint(x: 5_000, y: .infinity),
        ]
        let svg = SVGChartTests.chart([ChartSeries(name: "side", points: points)]).render()
        let numbers = coordinateNumbers(svg)
        #expect(numbers.count > 20)
        for number in numbers {
            #expect(Double(number)?.isFinite == true, "not a finite number: \(number)")
        }
        #expect(!svg.lowercased().contains("nan") && !svg.lowercased().contains("inf"))
        // The line is broken where points are missing: two runs of two.
        #expect(svg.components(separatedBy: "<path ").count - 1 == 2)
        #expect(svg.contains(
            "Not drawn: 3 points at or below zero, which a log axis cannot show; 2 points with no finite value."))
        #expect(xmlProblem(svg) == nil)
    }

    @Test func aPointAloneIsADotAndAChartWithNothingToDrawStillRenders() {
        let lone = SVGChartTests.chart([ChartSeries(name: "one", points: [ChartPoint(x: 10, y: 10)])]).render()
        #expect(lone.contains("<circle "))
        #expect(!lone.contains("<path "))
        let empty = SVGChartTests.chart([ChartSeries(name: "none", points: [ChartPoint(x: 0, y: 0)])]).render()
        #expect(xmlProblem(empty) == nil)
        #expect(coordinateNumbers(empty).allSatisfy { Double($0)?.isFinite == true })
    }

    @Test func stepsRunLevelThenUp() {
        let points = [ChartPoint(x: 10, y: 100), ChartPoint(x: 100, y: 1_000)]
        let line = SVGChartTests.chart([ChartSeries(name: "a", points: points)]).render()
        let steps = SVGChartTests.chart([ChartSeries(name: "a", points: points, steps: true)]).render()
        func segments(_ svg: String) -> Int {
            let path = svg.split(separator: "\n").first { $0.hasPrefix("<path ") } ?? ""
            return path.split(separator: " ").count { $0.hasPrefix("L") }
        }
        #expect(segments(line) == 1)
        #expect(segments(steps) == 2)
    }

    @Test func seriesShareAColourByGroupAndALegendEntryByName() {
        let p = [ChartPoint(x: 1, y: 1), ChartPoint(x: 10, y: 10)]
        let chart = SVGChart(
            title: "t", subtitle: nil,
            panels: (0..<2).map { panel in
                ChartPanel(
                    title: "panel \(panel)",
                    x: ChartAxis(title: "x", scale: .linear, unit: .count, lower: 0, upper: 10),
                    y: ChartAxis(title: "y", scale: .linear, unit: .count, lower: 0, upper: 10),
                    series: [
                        ChartSeries(name: "A: one measure", points: p, group: "A"),
                        ChartSeries(name: "A: another", points: p, group: "A", dashed: true),
                        ChartSeries(name: "B", points: p),
                    ])
            }, notes: [])
        let svg = chart.render()
        // One legend text per name, though every name is in both panels.
        #expect(svg.components(separatedBy: ">A: one measure</text>").count - 1 == 1)
        #expect(svg.components(separatedBy: ">B</text>").count - 1 == 1)
        let first = SVGChart.palette[0]
        let second = SVGChart.palette[1]
        #expect(svg.components(separatedBy: #"<path d="#).count - 1 == 6)
        #expect(svg.components(separatedBy: #"stroke="\#(first)" stroke-width="1.8""#).count - 1 == 4)
        #expect(svg.components(separatedBy: #"stroke="\#(second)" stroke-width="1.8""#).count - 1 == 2)
        #expect(svg.contains("panel 1"))
    }

    @Test func outputIsWellFormedAndTheSameEveryTime() {
        let series = (0..<12).map { index in
            ChartSeries(
                name: "side \(index)",
                points: (1...5).map { ChartPoint(x: Double($0 * 10), y: Double(index + 1) * Double($0) * 100) },
                markers: index % 2 == 0)
        }
        let chart = SVGChartTests.chart(series, notes: [String(repeating: "a long note ", count: 40)])
        let svg = chart.render()
        #expect(svg.hasPrefix(#"<?xml version="1.0" encoding="UTF-8"?>"#))
        #expect(xmlProblem(svg) == nil)
        #expect(svg == chart.render())
        // Past the palette's ten colours, lines are dashed.
        #expect(svg.contains("stroke-dasharray"))
    }

    @Test func theWellFormednessCheckCatchesBrokenDocuments() {
        #expect(xmlProblem(#"<?xml version="1.0"?>"# + "\n<svg a=\"1\"><g/><text>a &amp; b</text></svg>\n") == nil)
        #expect(xmlProblem("<svg><g></svg>") != nil)
        #expect(xmlProblem("<svg><text>a & b</text></svg>") != nil)
        #expect(xmlProblem("<svg><text>a < b</text></svg>") != nil)
        #expect(xmlProblem("<svg x=1/>") != nil)
        #expect(xmlProblem("<svg/><svg/>") != nil)
        #expect(xmlProblem("<svg>") != nil)
    }

    @Test func notesAreWrappedAtSpaces() {
        #expect(SVGChart.wrap("aaa bbb ccc", width: 7) == ["aaa bbb", "ccc"])
        #expect(SVGChart.wrap("a verylongword b", width: 4) == ["a", "verylongword", "b"])
        #expect(SVGChart.wrap("", width: 10).isEmpty)
    }
}
