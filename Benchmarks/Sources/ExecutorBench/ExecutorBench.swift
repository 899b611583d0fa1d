import TimerBench
import TimerKit

/// executor-peers: an actor on a TimerLoop sleeping on TimerKit's clock,
/// against a default actor sleeping with Task.sleep, in one run: rounds of
/// sleeps to a 1 ms grid, the sides alternating round by round.
public enum ExecutorBench {
    public struct Config: Sendable {
        public var rounds: Int
        public var sleepsPerRound: Int
        public var period: Duration

        public static let standard = Config(rounds: 10, sleepsPerRound: 500, period: .milliseconds(1))
        public static let quick = Config(rounds: 2, sleepsPerRound: 100, period: .milliseconds(1))
    }

    /// One side's records, merged over its rounds.
    public struct Side: Sendable {
        public var name: String
        public var record = SleepRecord()
    }

    /// Runs the rounds; the TimerKit side's loop runs on a thread of its own.
    public static func run(_ config: Config) async throws -> [Side] {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let onLoop = LoopSleeper(loop: loop)
        let taskSleep = TaskSleeper()
        var sides = [
            Side(name: "actor on a TimerLoop, MonotonicClock.sleep"),
            Side(name: "default actor, Task.sleep"),
        ]
        sides[0].record.crossThreadJobs = 0
        // A warm-up round each, not counted.
        _ = try await onLoop.run(count: 20, period: config.period)
        _ = try await taskSleep.run(count: 20, period: config.period)
        for round in 0..<config.rounds {
            progress("executor-peers: round \(round + 1) of \(config.rounds)")
            let order = round % 2 == 0 ? [0, 1] : [1, 0]
            for index in order {
                let record = index == 0
                    ? try await onLoop.run(count: config.sleepsPerRound, period: config.period)
                    : try await taskSleep.run(count: config.sleepsPerRound, period: config.period)
                sides[index].record.lateness += record.lateness
                sides[index].record.threadChanges += record.threadChanges
                sides[index].record.contextSwitches += record.contextSwitches
                if let jobs = record.crossThreadJobs {
                    sides[index].record.crossThreadJobs = (sides[index].record.crossThreadJobs ?? 0) + jobs
                }
            }
        }
        return sides
    }

    /// The table: lateness percentiles, thread changes and context switches
    /// per sleep, and ratios against the TimerKit side.
    public static func text(_ sides: [Side], config: Config, machine: String) -> String {
        var out = "executor-peers: \(config.rounds) rounds of \(config.sleepsPerRound) sleeps to a "
        out += "\(config.period) grid per side, alternating\n\(machine)\n"
        out += "lateness = wake-up time - grid time (us); changes = sleeps after which the actor ran on another thread;\n"
        out += "cross-thread jobs = jobs queued on the actor's executor by another thread (eventfd wake-ups);\n"
        out += "switches = process context switches per sleep.\n\n"
        out += pad("side", 44) + pad("sleeps", 8, right: true) + pad("p50", 9, right: true)
        out += pad("p99", 9, right: true) + pad("p999", 9, right: true) + pad("max", 9, right: true)
        out += pad("changes", 9, right: true) + pad("x-thread", 10, right: true)
        out += pad("switches", 10, right: true) + pad("p50/TK", 8, right: true) + pad("p99/TK", 8, right: true) + "\n"
        let base = sides[0].record.lateness.sorted()
        for side in sides {
            let sorted = side.record.lateness.sorted()
            let count = max(1, sorted.count)
            out += pad(side.name, 44) + pad("\(sorted.count)", 8, right: true)
            out += pad(micros(percentile(sorted, 0.50)), 9, right: true)
            out += pad(micros(percentile(sorted, 0.99)), 9, right: true)
            out += pad(micros(percentile(sorted, 0.999)), 9, right: true)
            out += pad(micros(sorted.last ?? 0), 9, right: true)
            out += pad(fixed(Double(side.record.threadChanges) / Double(count), 2), 9, right: true)
            out += pad(side.record.crossThreadJobs.map { fixed(Double($0) / Double(count), 2) } ?? "-", 10, right: true)
            out += pad(fixed(Double(side.record.contextSwitches) / Double(count), 2), 10, right: true)
            out += pad(ratio(Double(percentile(sorted, 0.50)), Double(percentile(base, 0.50))), 8, right: true)
            out += pad(ratio(Double(percentile(sorted, 0.99)), Double(percentile(base, 0.99))), 8, right: true)
            out += "\n"
        }
        return out
    }
}
