import Foundation

// A small SVG writer for the benchmark's line charts: plain string
// building, no dependency. A chart is a title, one or more panels stacked
// top to bottom (each with its own axes and lines), a legend shared by the
// panels and notes under them. The same chart always renders to the same
// text.

/// A point of a series, in the axes' units.
struct ChartPoint: Equatable, Sendable {
    var x: Double
    var y: Double
}

/// One line of a panel; series of the same name share a legend entry
/// across the panels of a chart, and series of the same group a colour.
struct ChartSeries: Sendable {
    var name: String
    var points: [ChartPoint]
    /// The side the series measures, when a side has several series (they
    /// share its colour); nil for the series' own name.
    var group: String?
    /// Drawn dashed, for a second measure of the same side.
    var dashed = false
    /// A dot at each point, for series with few points.
    var markers = false
    /// Drawn as a step function (a distribution): from each point the line
    /// runs level to the next point's x, then up or down to it.
    var steps = false
}

/// One plot of a chart: its axes and lines.
struct ChartPanel: Sendable {
    /// Written above the plot, when the chart has several panels.
    var title: String?
    var x: ChartAxis
    var y: ChartAxis
    var series: [ChartSeries]
}

/// A line chart written as a standalone SVG document.
///
/// Points with no place on an axis (not finite, or at or below zero on a
/// log axis) are not drawn: a line is broken there, and a note under the
/// chart says how many points each panel left out. Text is XML-escaped.
struct SVGChart: Sendable {
    var title: String
    /// A line under the title (what was run, where).
    var subtitle: String?
    var panels: [ChartPanel]
    /// Lines of explanation under the plots.
    var notes: [String]

    /// Width of the plot area of a panel, in pixels.
    var plotWidth = 560.0
    /// Height of the plot area of a panel, in pixels.
    var plotHeight = 280.0

    /// Line colours, in the order of the series' first appearance; after the
    /// tenth they repeat, dashed.
    static let palette = [
        "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    ]

    private static let left = 84.0
    private static let top = 56.0
    private static let panelTitleHeight = 22.0
    private static let belowPlot = 52.0
    private static let legendGap = 24.0
    private static let legendRow = 18.0
    private static let noteRow = 15.0
    /// Approximate width of a character of the 11 px legend and note text.
    private static let characterWidth = 6.2

    /// The document: an XML declaration and one `svg` element.
    func render() -> String {
        let legend = legendEntries
        let longest = legend.map(\.name.count).max() ?? 0
        let legendWidth = legend.isEmpty ? 0 : 40 + Double(longest) * SVGChart.characterWidth
        let width = (SVGChart.left + plotWidth + SVGChart.legendGap + legendWidth + 16).rounded(.up)
        let titled = panels.count > 1
        let panelHeight = (titled ? SVGChart.panelTitleHeight : 0) + plotHeight + SVGChart.belowPlot
        let top = SVGChart.top + (subtitle == nil ? 0 : 16)
        let plotsHeight = max(
            Double(panels.count) * panelHeight, Double(legend.count) * SVGChart.legendRow + 16)
        let noteLines = allNotes.flatMap {
            SVGChart.wrap($0, width: Int((width - 32) / SVGChart.characterWidth))
        }
        let height = (top + plotsHeight + 8 + Double(noteLines.count) * SVGChart.noteRow + 12).rounded(.up)

        var out: [String] = []
        out.append(#"<?xml version="1.0" encoding="UTF-8"?>"#)
        out.append(
            #"<svg xmlns="http://www.w3.org/2000/svg" width="\#(SVGChart.number(width))" height="\#(SVGChart.number(height))" viewBox="0 0 \#(SVGChart.number(width)) \#(SVGChart.number(height))" font-family="sans-serif" font-size="11">"#)
        out.append("<title>\(SVGChart.escape(title))</title>")
        out.append(##"<rect x="0" y="0" width="\##(SVGChart.number(width))" height="\##(SVGChart.number(height))" fill="#ffffff"/>"##)
        out.append(SVGChart.text(title, x: 16, y: 26, attributes: #"font-size="16" font-weight="bold""#))
        if let subtitle {
            out.append(SVGChart.text(subtitle, x: 16, y: 44, attributes: ##"fill="#444444""##))
        }
        for (index, panel) in panels.enumerated() {
            var y = top + Double(index) * panelHeight
            if titled, let panelTitle = panel.title {
                out.append(SVGChart.text(panelTitle, x: SVGChart.left, y: y + 14, attributes: #"font-size="12" font-weight="bold""#))
            }
            if titled { y += SVGChart.panelTitleHeight }
            out += plot(panel, x: SVGChart.left, y: y, colours: legend)
        }
        let legendX = SVGChart.left + plotWidth + SVGChart.legendGap
        for (row, entry) in legend.enumerated() {
            let y = top + (titled ? SVGChart.panelTitleHeight : 0) + 10 + Double(row) * SVGChart.legendRow
            out.append(SVGChart.line(
                legendX, y, legendX + 26, y, colour: entry.colour, dashed: entry.dashed, width: 2))
            if entry.markers {
                out.append(SVGChart.marker(legendX + 13, y, colour: entry.colour))
            }
            out.append(SVGChart.text(entry.name, x: legendX + 34, y: y + 4))
        }
        var noteY = top + plotsHeight + 8
        for line in noteLines {
            noteY += SVGChart.noteRow
            out.append(SVGChart.text(line, x: 16, y: noteY, attributes: ##"fill="#444444""##))
        }
        out.append("</svg>")
        return out.joined(separator: "\n") + "\n"
    }

    /// `text` with the characters XML gives a meaning (`& < > " '`) written
    /// as entities, and the control characters XML 1.0 does not allow
    /// (all below U+0020 but tab, line feed and carriage return) left out.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            default:
                if scalar.value >= 0x20 && scalar.value != 0xFFFE && scalar.value != 0xFFFF {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    // MARK: Parts

    /// A legend entry: one per series name, in order of first appearance.
    private struct LegendEntry {
        var name: String
        var colour: String
        var dashed: Bool
        var markers: Bool
    }

    private var legendEntries: [LegendEntry] {
        var entries: [LegendEntry] = []
        var groups: [String] = []
        for series in panels.flatMap(\.series) where !entries.contains(where: { $0.name == series.name }) {
            let group = series.group ?? series.name
            if !groups.contains(group) { groups.append(group) }
            let index = groups.firstIndex(of: group)!
            entries.append(LegendEntry(
                name: series.name, colour: SVGChart.palette[index % SVGChart.palette.count],
                dashed: series.dashed || index >= SVGChart.palette.count, markers: series.markers))
        }
        return entries
    }

    /// The given notes, then one for each panel that left points out.
    private var allNotes: [String] {
        var notes = self.notes
        for panel in panels {
            var atOrBelowZero = 0
            var notFinite = 0
            for point in panel.series.flatMap(\.points) {
                if !point.x.isFinite || !point.y.isFinite {
                    notFinite += 1
                } else if panel.x.position(point.x) == nil || panel.y.position(point.y) == nil {
                    atOrBelowZero += 1
                }
            }
            guard atOrBelowZero + notFinite > 0 else { continue }
            var parts: [String] = []
            if atOrBelowZero > 0 {
                parts.append("\(atOrBelowZero) point\(atOrBelowZero == 1 ? "" : "s") at or below zero, which a log axis cannot show")
            }
            if notFinite > 0 {
                parts.append("\(notFinite) point\(notFinite == 1 ? "" : "s") with no finite value")
            }
            let place = panels.count > 1 ? " (\(panel.title ?? "a panel"))" : ""
            notes.append("Not drawn\(place): " + parts.joined(separator: "; ") + ".")
        }
        return notes
    }

    /// A panel's frame, grid, ticks, axis titles and lines, its plot area's
    /// top left corner at (`x`, `y`).
    private func plot(_ panel: ChartPanel, x left: Double, y top: Double, colours legend: [LegendEntry]) -> [String] {
        var out: [String] = []
        let right = left + plotWidth
        let bottom = top + plotHeight
        out.append(##"<rect x="\##(SVGChart.number(left))" y="\##(SVGChart.number(top))" width="\##(SVGChart.number(plotWidth))" height="\##(SVGChart.number(plotHeight))" fill="none" stroke="#333333"/>"##)
        for tick in panel.x.ticks {
            guard let fraction = panel.x.position(tick.value) else { continue }
            let x = left + fraction * plotWidth
            if tick.major {
                out.append(SVGChart.line(x, top, x, bottom, colour: "#dddddd"))
            }
            out.append(SVGChart.line(x, bottom, x, bottom + (tick.major ? 6 : 3), colour: "#333333"))
            if let label = tick.label {
                out.append(SVGChart.text(label, x: x, y: bottom + 18, attributes: #"text-anchor="middle""#))
            }
        }
        for tick in panel.y.ticks {
            guard let fraction = panel.y.position(tick.value) else { continue }
            let y = bottom - fraction * plotHeight
            if tick.major {
                out.append(SVGChart.line(left, y, right, y, colour: "#dddddd"))
            }
            out.append(SVGChart.line(left - (tick.major ? 6 : 3), y, left, y, colour: "#333333"))
            if let label = tick.label {
                out.append(SVGChart.text(label, x: left - 9, y: y + 4, attributes: #"text-anchor="end""#))
            }
        }
        out.append(SVGChart.text(
            panel.x.title, x: left + plotWidth / 2, y: bottom + 38, attributes: #"text-anchor="middle" font-size="12""#))
        let middle = top + plotHeight / 2
        out.append(SVGChart.text(
            panel.y.title, x: 18, y: middle,
            attributes: #"text-anchor="middle" font-size="12" transform="rotate(-90 18 \#(SVGChart.number(middle)))""#))
        for series in panel.series {
            guard let entry = legend.first(where: { $0.name == series.name }) else { continue }
            // Runs of drawable points; a point with no place breaks the line.
            var runs: [[(Double, Double)]] = [[]]
            for point in series.points {
                if let fx = panel.x.position(point.x), let fy = panel.y.position(point.y) {
                    runs[runs.count - 1].append((left + fx * plotWidth, bottom - fy * plotHeight))
                } else if !runs[runs.count - 1].isEmpty {
                    runs.append([])
                }
            }
            for run in runs where !run.isEmpty {
                if run.count > 1 {
                    var d = "M" + SVGChart.number(run[0].0) + " " + SVGChart.number(run[0].1)
                    for index in 1..<run.count {
                        let (x, y) = run[index]
                        if series.steps { d += " L" + SVGChart.number(x) + " " + SVGChart.number(run[index - 1].1) }
                        d += " L" + SVGChart.number(x) + " " + SVGChart.number(y)
                    }
                    out.append(#"<path d="\#(d)" fill="none" stroke="\#(entry.colour)" stroke-width="1.8" stroke-linejoin="round"\#(entry.dashed ? #" stroke-dasharray="6 4""# : "")/>"#)
                }
                if series.markers || run.count == 1 {
                    for point in run { out.append(SVGChart.marker(point.0, point.1, colour: entry.colour)) }
                }
            }
        }
        return out
    }

    // MARK: Elements

    private static func text(_ text: String, x: Double, y: Double, attributes: String = "") -> String {
        #"<text x="\#(number(x))" y="\#(number(y))"\#(attributes.isEmpty ? "" : " " + attributes)>\#(escape(text))</text>"#
    }

    private static func line(
        _ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, colour: String, dashed: Bool = false,
        width: Double = 1
    ) -> String {
        #"<line x1="\#(number(x1))" y1="\#(number(y1))" x2="\#(number(x2))" y2="\#(number(y2))" stroke="\#(colour)" stroke-width="\#(number(width))"\#(dashed ? #" stroke-dasharray="6 4""# : "")/>"#
    }

    private static func marker(_ x: Double, _ y: Double, colour: String) -> String {
        #"<circle cx="\#(number(x))" cy="\#(number(y))" r="3" fill="\#(colour)"/>"#
    }

    /// A coordinate with one decimal; every coordinate written is finite
    /// (positions are clamped to the plot), so this never writes nan or inf.
    static func number(_ value: Double) -> String {
        precondition(value.isFinite, "a chart coordinate must be finite")
        let text = String(format: "%.1f", value)
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }

    /// `text` broken at spaces into lines of at most `width` characters
    /// (a longer word gets a line of its own).
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var current = ""
        for word in text.split(separator: " ") {
            if !current.isEmpty && current.count + 1 + word.count > width {
                lines.append(current)
                current = ""
            }
            current += (current.isEmpty ? "" : " ") + word
        }
        if !current.isEmpty { lines.append(current) }
        return lines
    }
}
