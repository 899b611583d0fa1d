// queue-peers: TimerKit's QueueTimer against DispatchSourceTimer, in one run:
// lateness of a repeating 1 ms timer, create + cancel with many timers
// pending, and what 10,000 timers at 10 % leeway cost in wake-ups and
// context switches. Ratios are Dispatch / QueueTimer, from the same run.
//
//   swift run -c release queue-peers [--quick] [--seed N]
import Dispatch
import Foundation
import TimerBench

struct Config {
    var latencyRuns: Int
    var pendingSizes: [Int]
    var pairs: Int
    var rounds: Int
    var coalescingTimers: Int
    var coalescingDuration: Int64

    static let full = Config(
        latencyRuns: 5000, pendingSizes: [1000, 100_000, 1_000_000], pairs: 10_000, rounds: 5,
        coalescingTimers: 10_000, coalescingDuration: 5_000_000_000)
    static let quick = Config(
        latencyRuns: 300, pendingSizes: [1000, 10_000], pairs: 1000, rounds: 3,
        coalescingTimers: 1000, coalescingDuration: 1_000_000_000)
}

var config = Config.full
var quick = false
var seed = UInt64(truncatingIfNeeded: monotonicNanoseconds())
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick":
        config = .quick
        quick = true
    case "--seed":
        guard let value = arguments.popFirst().flatMap(wholeNumber) else {
            FileHandle.standardError.write(Data("queue-peers: --seed needs a number\n".utf8))
            exit(64)
        }
        seed = value
    default:
        FileHandle.standardError.write(Data("""
            queue-peers: unknown option \(argument)
            usage: queue-peers [--quick] [--seed N]

            """.utf8))
        exit(64)
    }
}

func row(_ cells: [(String, Int)]) -> String {
    cells.enumerated().map { index, cell in pad(cell.0, cell.1, right: index > 0) }.joined()
}

do {
    let machine = Machine.describe()
    print("queue-peers\(quick ? " --quick" : ""): QueueTimer (TimerKit) against DispatchSourceTimer, seed \(seed)")
    print("\(machine.cpuModel), \(machine.processors) CPUs, Linux \(machine.kernel), load \(Machine.loadAverage())")
    print("ratios are Dispatch / QueueTimer\n")

    // 1. Lateness.
    progress("queue-peers: lateness, \(config.latencyRuns) runs of a repeating 1 ms timer per side")
    let period: Int64 = 1_000_000
    let queueLateness = try QueueLateness.queueTimer(period: period, runs: config.latencyRuns).sorted()
    let dispatchLateness = QueueLateness.dispatch(period: period, runs: config.latencyRuns).sorted()
    print("lateness of a repeating 1 ms timer, leeway 0 (us after the grid point, CLOCK_MONOTONIC, \(config.latencyRuns) handler runs)")
    print(row([("side", 22), ("p50", 9), ("p99", 9), ("max", 10), ("early", 7)]))
    for (name, sorted) in [("QueueTimer", queueLateness), ("DispatchSourceTimer", dispatchLateness)] {
        print(row([
            (name, 22), (micros(percentile(sorted, 0.5)), 9), (micros(percentile(sorted, 0.99)), 9),
            (micros(sorted.last ?? 0), 10), ("\(sorted.filter { $0 < 0 }.count)", 7),
        ]))
    }
    print(row([
        ("ratio", 22),
        (ratio(Double(percentile(dispatchLateness, 0.5)), Double(percentile(queueLateness, 0.5))), 9),
        (ratio(Double(percentile(dispatchLateness, 0.99)), Double(percentile(queueLateness, 0.99))), 9),
        (ratio(Double(dispatchLateness.last ?? 0), Double(queueLateness.last ?? 0)), 10),
    ]))

    // 2. Create + cancel.
    print("\ncreate + schedule + activate + cancel, ns per timer (median of \(config.rounds) rounds of \(config.pairs))")
    print(row([("pending", 10), ("QueueTimer", 12), ("Dispatch", 12), ("ratio", 8)]))
    for pending in config.pendingSizes {
        progress("queue-peers: create + cancel with \(pending) pending")
        let ours = try QueueCost.queueTimer(pending: pending, pairs: config.pairs, rounds: config.rounds)
        let theirs = QueueCost.dispatch(pending: pending, pairs: config.pairs, rounds: config.rounds)
        print(row([("\(pending)", 10), (fixed(ours, 0), 12), (fixed(theirs, 0), 12), (ratio(theirs, ours), 8)]))
    }

    // 3. Coalescing.
    let fraction = 0.1
    let (periods, phases) = QueueCoalescing.plan(count: config.coalescingTimers, seed: seed)
    let seconds = Double(config.coalescingDuration) / 1e9
    progress("queue-peers: \(config.coalescingTimers) timers at 10 % leeway, \(fixed(seconds, 1)) s per side")
    let ours = try QueueCoalescing.queueTimer(
        periods: periods, phases: phases, fraction: fraction, duration: config.coalescingDuration)
    let theirs = QueueCoalescing.dispatch(
        periods: periods, phases: phases, fraction: fraction, duration: config.coalescingDuration)
    print("\n\(config.coalescingTimers) repeating timers, periods 100 ms to 1 s, leeway 10 % of the period, \(fixed(seconds, 1)) s each, per second:")
    print("fires; batches = handler runs more than 100 us after the one before; loop wake-ups (QueueTimer's loop);")
    print("voluntary / involuntary context switches of the process (getrusage RUSAGE_SELF)")
    print(row([("side", 22), ("fires", 9), ("batches", 9), ("wake-ups", 10), ("vol cs", 9), ("invol cs", 10)]))
    func perSecond(_ value: Int64, _ cost: CoalescingCost) -> Double { Double(value) / cost.seconds }
    for (name, cost) in [("QueueTimer", ours), ("DispatchSourceTimer", theirs)] {
        print(row([
            (name, 22), (fixed(perSecond(cost.fires, cost), 0), 9), (fixed(perSecond(cost.batches, cost), 0), 9),
            (cost.loopWakeups.map { fixed(perSecond($0, cost), 0) } ?? "-", 10),
            (fixed(perSecond(cost.voluntary, cost), 0), 9), (fixed(perSecond(cost.involuntary, cost), 1), 10),
        ]))
    }
    print(row([
        ("ratio", 22), (ratio(Double(theirs.fires), Double(ours.fires)), 9),
        (ratio(Double(theirs.batches), Double(ours.batches)), 9), ("", 10),
        (ratio(Double(theirs.voluntary), Double(ours.voluntary)), 9),
        (ratio(Double(theirs.involuntary), Double(ours.involuntary)), 10),
    ]))
    if ours.fires == 0 || theirs.fires == 0 {
        throw SideFailure("a side did not fire (QueueTimer \(ours.fires), Dispatch \(theirs.fires))")
    }
} catch {
    FileHandle.standardError.write(Data("queue-peers: \(error)\n".utf8))
    exit(1)
}
