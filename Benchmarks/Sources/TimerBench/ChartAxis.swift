import Foundation

// The axes of the benchmark's charts (SVGChart): a linear or logarithmic
// scale over a domain, where a value lands on it, and its ticks and labels.

/// How the values of an axis are written on its labels.
enum ChartUnit: Sendable {
    /// Nanoseconds, written in ns, µs, ms or s ("250 ns", "1.5 ms").
    case nanoseconds
    /// A count, written with k, M, G or T ("100k", "1M").
    case count
    /// A share given as a fraction, written in percent (0.1 is "10%").
    case percent

    /// `value` as a tick label: at most three significant digits.
    func label(_ value: Double) -> String {
        guard value.isFinite else { return "-" }
        if value == 0 { return self == .percent ? "0%" : "0" }
        switch self {
        case .nanoseconds:
            return ChartUnit.scaled(value, [(1e9, " s"), (1e6, " ms"), (1e3, " µs"), (1, " ns")])
        case .count:
            return ChartUnit.scaled(value, [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, "")])
        case .percent:
            return ChartUnit.significant(value * 100) + "%"
        }
    }

    /// `value` divided by the largest of `steps` its magnitude reaches (the
    /// last when it reaches none), with that step's suffix.
    private static func scaled(_ value: Double, _ steps: [(Double, String)]) -> String {
        let step = steps.first { value.magnitude >= $0.0 } ?? steps[steps.count - 1]
        return significant(value / step.0) + step.1
    }

    /// Three significant digits, without trailing zeros (whole numbers
    /// from 1,000 on, which %g would write with an exponent).
    private static func significant(_ value: Double) -> String {
        String(format: value.magnitude >= 1000 ? "%.0f" : "%.3g", value)
    }
}

/// A tick of an axis: where it stands, and its label (nil for a tick that
/// is only marked, such as 2 to 9 times a decade on a log axis).
struct ChartTick: Equatable, Sendable {
    var value: Double
    var label: String?
    /// Major ticks get a grid line across the plot; minor ones a short mark.
    var major: Bool
}

/// One axis of a chart: its title, scale and domain.
struct ChartAxis: Sendable {
    /// How values are spaced along the axis.
    enum Scale: Sendable {
        case linear
        /// Base 10; only positive values have a place on it.
        case log
    }

    var title: String
    var scale: Scale
    var unit: ChartUnit
    /// The domain: the values at the two ends of the axis (lower < upper,
    /// both positive on a log axis).
    private(set) var lower: Double
    private(set) var upper: Double

    /// An axis over a given domain; an empty, reversed or (on a log axis)
    /// non-positive domain is widened to one that is not.
    init(title: String, scale: Scale, unit: ChartUnit, lower: Double, upper: Double) {
        self.title = title
        self.scale = scale
        self.unit = unit
        var lower = lower.isFinite ? lower : 0
        var upper = upper.isFinite ? upper : lower
        if scale == .log {
            if lower <= 0 { lower = upper > 0 ? upper / 10 : 1 }
            if upper <= lower { upper = lower * 10 }
        } else if upper <= lower {
            upper = lower + (lower == 0 ? 1 : lower.magnitude)
        }
        self.lower = lower
        self.upper = upper
    }

    /// An axis whose domain covers `values` with round ends: whole decades
    /// on a log axis (which leaves out values at or below zero), multiples
    /// of the tick step on a linear one. Values that are not finite are
    /// left out.
    init(title: String, scale: Scale, unit: ChartUnit, covering values: some Sequence<Double>) {
        let usable = values.filter { $0.isFinite && (scale == .linear || $0 > 0) }
        let low = usable.min() ?? (scale == .log ? 1 : 0)
        let high = usable.max() ?? low
        switch scale {
        case .log:
            let lowDecade = ChartAxis.decade(below: low)
            let highDecade = max(ChartAxis.decade(above: high), lowDecade + 1)
            self.init(
                title: title, scale: scale, unit: unit,
                lower: pow(10, Double(lowDecade)), upper: pow(10, Double(highDecade)))
        case .linear:
            let widened = ChartAxis(title: title, scale: scale, unit: unit, lower: low, upper: high)
            let step = ChartAxis.niceStep(widened.upper - widened.lower)
            self.init(
                title: title, scale: scale, unit: unit,
                lower: (widened.lower / step + 1e-9).rounded(.down) * step,
                upper: (widened.upper / step - 1e-9).rounded(.up) * step)
        }
    }

    /// Where `value` lands along the axis, from 0 (lower end) to 1 (upper
    /// end), clamped to the ends; nil for a value with no place on the axis
    /// (not finite, or at or below zero on a log axis).
    func position(_ value: Double) -> Double? {
        guard value.isFinite else { return nil }
        let fraction: Double
        switch scale {
        case .linear:
            fraction = (value - lower) / (upper - lower)
        case .log:
            guard value > 0 else { return nil }
            fraction = (log10(value) - log10(lower)) / (log10(upper) - log10(lower))
        }
        return min(max(fraction, 0), 1)
    }

    /// The ticks, lowest first. A log axis has a major tick at each decade
    /// (labelled; only every second or third one when there are more than
    /// six) and minor ticks at 2 to 9 times each decade; a linear axis has
    /// about five labelled ticks at multiples of 1, 2 or 5 times a power of
    /// ten.
    var ticks: [ChartTick] {
        switch scale {
        case .log: return logTicks
        case .linear: return linearTicks
        }
    }

    private var logTicks: [ChartTick] {
        let low = ChartAxis.decade(below: lower)
        let high = ChartAxis.decade(above: upper)
        let labelEvery = max(1, Int((Double(high - low) / 6).rounded(.up)))
        var ticks: [ChartTick] = []
        for exponent in low...high {
            let decade = pow(10, Double(exponent))
            if decade >= lower * 0.999_999 && decade <= upper * 1.000_001 {
                let labelled = (exponent - low) % labelEvery == 0
                ticks.append(ChartTick(value: decade, label: labelled ? unit.label(decade) : nil, major: true))
            }
            for multiple in 2...9 {
                let value = Double(multiple) * decade
                if value > lower && value < upper {
                    ticks.append(ChartTick(value: value, label: nil, major: false))
                }
            }
        }
        return ticks
    }

    private var linearTicks: [ChartTick] {
        let step = ChartAxis.niceStep(upper - lower)
        // The tolerance keeps an end that is a multiple of the step (up to
        // rounding, as 0.3 / 0.1) a tick.
        let first = Int((lower / step - 1e-9).rounded(.up))
        let last = Int((upper / step + 1e-9).rounded(.down))
        guard first <= last else { return [] }
        return (first...last).map { index in
            let value = Double(index) * step
            return ChartTick(value: value, label: unit.label(value), major: true)
        }
    }

    /// 1, 2 or 5 times a power of ten, near a fifth of `span`.
    static func niceStep(_ span: Double) -> Double {
        guard span.isFinite, span > 0 else { return 1 }
        let raw = span / 5
        let magnitude = pow(10, (log10(raw)).rounded(.down))
        let factor = raw / magnitude
        let slack = 1 + 1e-9
        let nice: Double = factor <= slack ? 1 : factor <= 2 * slack ? 2 : factor <= 5 * slack ? 5 : 10
        return nice * magnitude
    }

    /// The exponent of the largest power of ten at or below `value` (> 0).
    private static func decade(below value: Double) -> Int {
        Int((log10(value) + 1e-9).rounded(.down))
    }

    /// The exponent of the smallest power of ten at or above `value` (> 0).
    private static func decade(above value: Double) -> Int {
        Int((log10(value) - 1e-9).rounded(.up))
    }
}
