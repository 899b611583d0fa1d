import Dispatch
import Foundation
import TimerBench
import TimerKit

/// What one side cost while many timers ran: handler runs, batches of them
/// (runs less than 100 us after the one before belong to its batch: one
/// wake-up of the queue), the loop's own wake-ups where it has a loop, and
/// the process's context switches (getrusage RUSAGE_SELF).
struct CoalescingCost {
    var seconds = 0.0
    var fires: Int64 = 0
    var batches: Int64 = 0
    var loopWakeups: Int64?
    var voluntary: Int64 = 0
    var involuntary: Int64 = 0
}

/// Handler runs on one serial queue, counted into batches.
final class BatchLog: @unchecked Sendable {
    private(set) var fires: Int64 = 0
    private(set) var batches: Int64 = 0
    private var last: Int64 = 0

    func record(_ count: UInt64) {
        let now = monotonicNanoseconds()
        fires += Int64(count)
        if last == 0 || now - last > 100_000 { batches += 1 }
        last = now
    }
}

func contextSwitches() -> (voluntary: Int64, involuntary: Int64) {
    var usage = rusage()
    guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return (-1, -1) }
    return (Int64(usage.ru_nvcsw), Int64(usage.ru_nivcsw))
}

/// `count` repeating timers with periods uniform in [100 ms, 1 s) and random
/// phases, each with `fraction` of its period as leeway, for `duration` ns.
enum QueueCoalescing {
    static func plan(count: Int, seed: UInt64) -> (periods: [Int64], phases: [Int64]) {
        var random = SeededGenerator(seed: seed)
        let periods = (0..<count).map { _ in random.next(in: 100_000_000, 1_000_000_000) }
        let phases = periods.map { random.next(in: 0, $0) }
        return (periods, phases)
    }

    static func queueTimer(
        periods: [Int64], phases: [Int64], fraction: Double, duration: Int64
    ) throws -> CoalescingCost {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let queue = DispatchQueue(label: "queue-peers.coalescing")
        let log = BatchLog()
        let start = monotonicNanoseconds() + 50_000_000
        var timers: [QueueTimer] = []
        for index in periods.indices {
            let timer = try QueueTimer(queue: queue, loop: loop)
            timer.setEventHandler { fires in log.record(fires) }
            try timer.schedule(
                deadline: MonotonicClock.Instant(offset: .nanoseconds(start + phases[index])),
                repeating: .nanoseconds(periods[index]),
                leeway: .nanoseconds(Int64(Double(periods[index]) * fraction)))
            timers.append(timer)
        }
        for timer in timers { try timer.activate() }
        return measure(start: start, duration: duration, queue: queue, log: log, loop: loop) {
            for timer in timers { timer.cancel() }
        }
    }

    static func dispatch(
        periods: [Int64], phases: [Int64], fraction: Double, duration: Int64
    ) -> CoalescingCost {
        let queue = DispatchQueue(label: "queue-peers.coalescing.dispatch")
        let offset = DispatchClockOffset.measure()
        let log = BatchLog()
        let start = monotonicNanoseconds() + 50_000_000
        var sources: [DispatchSourceTimer] = []
        for index in periods.indices {
            let source = DispatchSource.makeTimerSource(queue: queue)
            source.setEventHandler { log.record(UInt64(source.data)) }
            source.schedule(
                deadline: offset.dispatchTime(start + phases[index]),
                repeating: .nanoseconds(Int(periods[index])),
                leeway: .nanoseconds(Int(Double(periods[index]) * fraction)))
            sources.append(source)
        }
        for source in sources { source.activate() }
        return measure(start: start, duration: duration, queue: queue, log: log, loop: nil) {
            for source in sources { source.cancel() }
        }
    }

    /// Counts from `start` for `duration`, then stops the side with `stop`.
    private static func measure(
        start: Int64, duration: Int64, queue: DispatchQueue, log: BatchLog, loop: TimerLoop?,
        stop: () -> Void
    ) -> CoalescingCost {
        let wait = start - monotonicNanoseconds()
        if wait > 0 { usleep(UInt32(wait / 1000)) }
        let (fires, batches) = queue.sync { (log.fires, log.batches) }
        let wakeups = loop.map { Int64($0.statistics.wakeups) }
        let switches = contextSwitches()
        let begin = monotonicNanoseconds()
        usleep(UInt32(duration / 1000))
        let switchesAfter = contextSwitches()
        let wakeupsAfter = loop.map { Int64($0.statistics.wakeups) }
        let seconds = Double(monotonicNanoseconds() - begin) / 1e9
        let (firesAfter, batchesAfter) = queue.sync { (log.fires, log.batches) }
        stop()
        queue.sync {}
        var cost = CoalescingCost(seconds: seconds)
        cost.fires = firesAfter - fires
        cost.batches = batchesAfter - batches
        if let wakeups, let wakeupsAfter { cost.loopWakeups = wakeupsAfter - wakeups }
        cost.voluntary = switchesAfter.voluntary - switches.voluntary
        cost.involuntary = switchesAfter.involuntary - switches.involuntary
        return cost
    }
}
