import Foundation
import TimerBench

extension CountdownBench.Report {
    /// The figures as a table, with ratios against the first side
    /// (CountdownCenter), and the issue's targets checked.
    public func text(machine: Machine, load: String) -> String {
        var out: [String] = []
        out.append(
            "Countdowns: \(config.countdowns) countdowns, \(config.observed) observed; seed \(seed); "
                + "\(machine.cpuModel), \(machine.processors) CPUs, Linux \(machine.kernel), load \(load)")
        out.append("")
        out.append(
            pad("", 25) + pad("bytes/cd", 10, right: true) + pad("add ns", 9, right: true)
                + pad("remove ns", 11, right: true) + pad("tick p50 µs", 13, right: true)
                + pad("tick max µs", 13, right: true) + pad("CPU/s", 8, right: true)
                + pad("wake-ups/s", 12, right: true))
        for row in rows {
            if let failed = row.failed {
                out.append(pad(row.name, 25) + "failed: \(failed)")
                continue
            }
            out.append(
                pad(row.name, 25) + pad(fixed(row.bytesPerCountdown, 1), 10, right: true)
                    + pad(fixed(row.addNs, 0), 9, right: true) + pad(fixed(row.removeNs, 0), 11, right: true)
                    + pad(micros(row.tickP50Ns), 13, right: true) + pad(micros(row.tickMaxNs), 13, right: true)
                    + pad(fixed(row.cpuPerSecond * 100, 2) + "%", 8, right: true)
                    + pad(fixed(row.wakeupsPerSecond, 1), 12, right: true))
        }
        if let reference = rows.first, reference.failed == nil {
            out.append("")
            out.append("Ratio to \(reference.name) (same run; above 1: the peer costs more)")
            for row in rows.dropFirst() where row.failed == nil {
                out.append(
                    pad(row.name, 25) + pad(ratio(row.bytesPerCountdown, reference.bytesPerCountdown), 10, right: true)
                        + pad(ratio(row.addNs, reference.addNs), 9, right: true)
                        + pad(ratio(row.removeNs, reference.removeNs), 11, right: true)
                        + pad(ratio(Double(row.tickP50Ns), Double(reference.tickP50Ns)), 13, right: true)
                        + pad(ratio(Double(row.tickMaxNs), Double(reference.tickMaxNs)), 13, right: true)
                        + pad(ratio(row.cpuPerSecond, reference.cpuPerSecond), 8, right: true)
                        + pad(ratio(row.wakeupsPerSecond, reference.wakeupsPerSecond), 12, right: true))
            }
        }
        out.append("")
        let blocked = rows.first?.drift.blockedSeconds ?? 0
        out.append(
            "Drift: a simulated \(config.simulatedSeconds) s, \(config.observed) displayed countdowns among "
                + "\(config.observed * 10), the ticker blocked for \(blocked) s in all")
        out.append(
            pad("", 25) + pad("display off s", 14, right: true) + pad("(max)", 7, right: true)
                + pad("ends late s", 13, right: true) + pad("(max)", 8, right: true)
                + pad("early", 7, right: true) + pad("missed", 8, right: true) + pad("twice", 7, right: true))
        for row in rows where row.failed == nil {
            let drift = row.drift
            out.append(
                pad(row.name, 25) + pad(fixed(drift.meanDisplayError, 1), 14, right: true)
                    + pad(String(drift.maxDisplayError), 7, right: true)
                    + pad(fixed(drift.meanEndLateness, 2), 13, right: true)
                    + pad(fixed(drift.maxEndLateness, 2), 8, right: true)
                    + pad(String(drift.earlyEnds), 7, right: true) + pad(String(drift.missedEnds), 8, right: true)
                    + pad(String(drift.repeatedEnds), 7, right: true))
        }
        if !dispatch.isEmpty {
            out.append("")
            let figures = dispatch.map { "\($0.size) pending: \(fixed($0.nsPerEnd, 0)) ns" }
            var line = "One end dispatched by CountdownCenter (a loop pass each): " + figures.joined(separator: "; ")
            if dispatch.count >= 2, let small = dispatch.first, let large = dispatch.last {
                line += "; ratio \(ratio(large.nsPerEnd, small.nsPerEnd)) for log2 ratio "
                    + fixed(log2(Double(large.size)) / log2(Double(small.size)), 2)
            }
            out.append(line)
        }
        if let center = rows.first, center.failed == nil {
            out.append("")
            out.append(
                "Targets for CountdownCenter at \(config.countdowns) countdowns, \(config.observed) observed: "
                    + target("tick p50", Double(center.tickP50Ns) / 1000, 50, "µs") + "; "
                    + target("add", center.addNs, 200, "ns") + "; " + target("remove", center.removeNs, 200, "ns")
                    + "; " + target("memory", center.bytesPerCountdown, 100, "B/countdown"))
        }
        for failure in failures { out.append("FAILED: \(failure)") }
        out.append("done in \(fixed(elapsedSeconds, 1)) s")
        return out.joined(separator: "\n")
    }

    private func target(_ name: String, _ value: Double, _ limit: Double, _ unit: String) -> String {
        "\(name) \(fixed(value, 1)) \(unit) (≤ \(fixed(limit, 0)): \(value <= limit ? "met" : "NOT met"))"
    }

    /// The figures as JSON.
    public var json: JSON {
        .object([
            ("countdowns", .int(Int64(config.countdowns))), ("observed", .int(Int64(config.observed))),
            ("seed", .string(String(seed))),
            (
                "sides",
                .array(
                    rows.map { row in
                        .object([
                            ("name", .string(row.name)), ("failed", row.failed.map { .string($0) } ?? .null),
                            ("bytes_per_countdown", .number(row.bytesPerCountdown)), ("add_ns", .number(row.addNs)),
                            ("remove_ns", .number(row.removeNs)), ("tick_p50_ns", .int(row.tickP50Ns)),
                            ("tick_max_ns", .int(row.tickMaxNs)), ("cpu_per_second", .number(row.cpuPerSecond)),
                            ("wakeups_per_second", .number(row.wakeupsPerSecond)),
                            ("display_error_mean_s", .number(row.drift.meanDisplayError)),
                            ("display_error_max_s", .int(row.drift.maxDisplayError)),
                            ("end_lateness_mean_s", .number(row.drift.meanEndLateness)),
                            ("end_lateness_max_s", .number(row.drift.maxEndLateness)),
                            ("early_ends", .int(Int64(row.drift.earlyEnds))),
                            ("missed_ends", .int(Int64(row.drift.missedEnds))),
                            ("repeated_ends", .int(Int64(row.drift.repeatedEnds))),
                            ("blocked_seconds", .int(row.drift.blockedSeconds)),
                        ])
                    })
            ),
            (
                "dispatch",
                .array(dispatch.map { .object([("size", .int(Int64($0.size))), ("ns_per_end", .number($0.nsPerEnd))]) })
            ),
            ("failures", .array(failures.map { .string($0) })),
        ])
    }
}
