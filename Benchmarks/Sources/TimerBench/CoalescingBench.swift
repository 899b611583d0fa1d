import Dispatch
import Foundation
import TimerKit

// Part 3b: coalescing. 10,000 repeating timers with random periods run for a
// while, with no tolerance and with 10% of each period as tolerance (leeway):
// how often the process wakes up to serve them. TimerKit's TimerLoop (its own
// wake-up counter and the loop thread's voluntary context switches) against
// DispatchSourceTimers on a serial queue with the same leeway (voluntary
// context switches of all the process's threads: Dispatch has no counter).

struct CoalescingConfig {
    var timers: Int
    /// Each timer's period is uniform in this range.
    var minPeriod: Int64 = 100_000_000
    var maxPeriod: Int64 = 1_000_000_000
    /// How long each side runs.
    var duration: Int64
    /// Tolerance as a fraction of the period, one run per fraction and side.
    var fractions: [Double] = [0, 0.1]
}

/// The two sides of the coalescing run.
public enum CoalescingSide: String, CaseIterable, Sendable {
    case timerLoop = "TimerKit TimerLoop"
    case dispatch = "DispatchSourceTimer"
}

/// One side at one tolerance.
public struct CoalescingFigure: Sendable {
    public var name: String
    public var fraction: Double
    public var seconds = 0.0
    public var fires = 0
    /// The loop's own count, where the side has one.
    public var loopWakeups: Int64?
    /// Voluntary context switches of the thread that sleeps for the timers.
    public var loopThreadSwitches: Int64?
    /// Voluntary context switches of every thread of the process.
    public var allThreadSwitches: Int64 = 0
    public var lateness = Summary()
    public var early = 0
    public var failed: String?

    public var firesPerSecond: Double { Double(fires) / seconds }
    public var wakeupsPerSecond: Double? { loopWakeups.map { Double($0) / seconds } }
    public var switchesPerSecond: Double { Double(allThreadSwitches) / seconds }
}

/// The grid of every timer and the lateness of each fire against it.
/// Written by one thread at a time (the loop's, or the serial queue's).
final class CoalescingLog: @unchecked Sendable {
    private var first: [Int64]
    private let periods: [Int64]
    private var lateness: [Int64] = []
    private(set) var early = 0
    let end: Int64

    init(first: [Int64], periods: [Int64], end: Int64) {
        self.first = first
        self.periods = periods
        self.end = end
        // Room for every fire of the run, so that no fire grows the array.
        let start = first.min() ?? end
        lateness.reserveCapacity(periods.reduce(0) { $0 + Int(max(end - start, 0) / $1) + 2 })
    }

    var fires: Int { lateness.count }

    /// Records a fire of timer `index` standing for `consumed` grid points.
    @inline(__always)
    func fire(_ index: Int, at now: Int64, consumed: Int64) {
        let late = now - first[index]
        if late < 0 { early += 1 }
        lateness.append(late)
        first[index] += max(consumed, 1) * periods[index]
    }

    var summary: Summary { Summary(lateness) }
}

public enum CoalescingBench {
    static func run(_ config: CoalescingConfig, rng: inout SeededGenerator, failures: inout [String])
        -> [CoalescingFigure]
    {
        var figures: [CoalescingFigure] = []
        for fraction in config.fractions {
            for side in CoalescingSide.allCases {
                progress("coalescing: \(side.rawValue), \(config.timers) timers, tolerance \(Int(fraction * 100))% of the period, \(fixed(Double(config.duration) / 1e9, 1)) s")
                do {
                    figures.append(try measure(
                        side, timers: config.timers, periods: config.minPeriod...config.maxPeriod,
                        fraction: fraction, duration: config.duration, rng: &rng))
                } catch {
                    var figure = CoalescingFigure(name: side.rawValue, fraction: fraction)
                    figure.failed = "\(error)"
                    figures.append(figure)
                    failures.append("coalescing \(side.rawValue) \(Int(fraction * 100))%: \(error)")
                }
            }
        }
        return figures
    }

    /// One run: `timers` repeating timers with periods uniform in `periods`
    /// and random phases, tolerance `fraction` of each period, for `duration`
    /// nanoseconds.
    public static func measure(
        _ side: CoalescingSide, timers: Int, periods: ClosedRange<Int64>, fraction: Double,
        duration: Int64, rng: inout SeededGenerator
    ) throws -> CoalescingFigure {
        let periodList = (0..<timers).map { _ in rng.next(in: periods.lowerBound, periods.upperBound + 1) }
        let phases = periodList.map { rng.next(in: 0, $0) }
        var figure = CoalescingFigure(name: side.rawValue, fraction: fraction)
        switch side {
        case .timerLoop: try timerLoop(periodList, phases, fraction, duration, &figure)
        case .dispatch: try dispatch(periodList, phases, fraction, duration, &figure)
        }
        return figure
    }

    private static func timerLoop(
        _ periods: [Int64], _ phases: [Int64], _ fraction: Double, _ duration: Int64,
        _ figure: inout CoalescingFigure
    ) throws {
        let loop = try TimerLoop()
        let start = monotonicNanoseconds() + 20_000_000
        let log = CoalescingLog(
            first: phases.map { start + $0 }, periods: periods, end: start + duration)
        var timers: [LoopTimer<MonotonicClock>] = []
        timers.reserveCapacity(periods.count)
        for i in periods.indices {
            let timer = try LoopTimer(
                fireAt: MonotonicClock.Instant(offset: .nanoseconds(start + phases[i])), repeating: .nanoseconds(periods[i]),
                tolerance: .nanoseconds(Int64(Double(periods[i]) * fraction))
            ) { _, missed in
                log.fire(i, at: monotonicNanoseconds(), consumed: 1 + Int64(missed))
            }
            try loop.add(timer)
            timers.append(timer)
        }
        defer { for timer in timers { timer.invalidate() } }
        // Counted from the start instant on, with the timers already in.
        _ = try loop.run(until: MonotonicClock.Instant(offset: .nanoseconds(start)))
        let wakeups0 = loop.statistics.wakeups
        let loopThread0 = ContextSwitches.mainThread()
        let all0 = ContextSwitches.allThreads()
        let fires0 = log.fires
        _ = try loop.run(until: MonotonicClock.Instant(offset: .nanoseconds(log.end)))
        let elapsed = monotonicNanoseconds() - start
        figure.loopWakeups = Int64(loop.statistics.wakeups - wakeups0)
        figure.loopThreadSwitches = ContextSwitches.mainThread() - loopThread0
        figure.allThreadSwitches = ContextSwitches.allThreads() - all0
        figure.seconds = Double(elapsed) / 1e9
        figure.fires = log.fires - fires0
        figure.lateness = log.summary
        figure.early = log.early
        guard figure.fires > 0 else { throw SideFailure("no timer fired") }
    }

    private static func dispatch(
        _ periods: [Int64], _ phases: [Int64], _ fraction: Double, _ duration: Int64,
        _ figure: inout CoalescingFigure
    ) throws {
        let queue = DispatchQueue(label: "timerkit.bench.coalescing")
        let offset = DispatchClockOffset.measure()
        let start = monotonicNanoseconds() + 20_000_000
        let log = CoalescingLog(
            first: phases.map { start + $0 }, periods: periods, end: start + duration)
        var sources: [DispatchSourceTimer] = []
        sources.reserveCapacity(periods.count)
        for i in periods.indices {
            let source = DispatchSource.makeTimerSource(queue: queue)
            source.setEventHandler {
                log.fire(i, at: monotonicNanoseconds(), consumed: Int64(source.data))
            }
            source.schedule(
                deadline: offset.dispatchTime(start + phases[i]),
                repeating: .nanoseconds(Int(periods[i])),
                leeway: .nanoseconds(Int(Double(periods[i]) * fraction)))
            source.resume()
            sources.append(source)
        }
        queue.sync {}
        let wait = start - monotonicNanoseconds()
        if wait > 0 { usleep(UInt32(wait / 1000)) }
        let all0 = ContextSwitches.allThreads()
        let fires0 = queue.sync { log.fires }
        // The main thread sleeps once for the whole run.
        let left = log.end - monotonicNanoseconds()
        if left > 0 { usleep(UInt32(left / 1000)) }
        let all1 = ContextSwitches.allThreads()
        let fires1 = queue.sync { log.fires }
        let elapsed = monotonicNanoseconds() - start
        for source in sources { source.cancel() }
        queue.sync {}
        figure.allThreadSwitches = all1 - all0
        figure.seconds = Double(elapsed) / 1e9
        figure.fires = fires1 - fires0
        figure.lateness = queue.sync { log.summary }
        figure.early = queue.sync { log.early }
        guard figure.fires > 0 else { throw SideFailure("no source fired") }
    }
}
