import Dispatch
import Foundation
import TimerKit

// Part 3: what tolerance does.
//  (a) How late a 5 ms sleep with 5 ms tolerance ends: Task.sleep (the
//      standard library on Linux ignores the tolerance) against TimerKit's
//      MonotonicClock, which arms its timer at deadline + tolerance; each also
//      without tolerance, for reference.
//  (b) Wake-ups for 1,000 one-shot timers with deadlines uniform in
//      [10 ms, 20 ms]: a TimerLoop with 10 ms tolerance (the loop's own
//      wake-up counter) against DispatchSourceTimers with 10 ms leeway
//      (voluntary context switches of all the process's threads, a proxy);
//      both also with 0, for reference.

struct SleepFigure {
    var name: String
    var tolerance: Duration?
    var samples: [Int64] = []
    var failed: String?
    var summary: Summary { Summary(samples) }
}

struct WakeupFigure {
    var name: String
    var toleranceNs: Int64
    /// Per repetition.
    var loopWakeups: [Int64] = []
    var contextSwitches: [Int64] = []
    var mainThreadSwitches: [Int64] = []
    var lateness: [Int64] = []
    var early = 0
    var failed: String?
}

struct ToleranceConfig {
    var sleeps: Int
    var timers: Int
    var reps: Int
    var sleepFor: Int64 = 5_000_000
    var sleepTolerance: Int64 = 5_000_000
    var minDeadline: Int64 = 10_000_000
    var maxDeadline: Int64 = 20_000_000
    var timerTolerance: Int64 = 10_000_000
}

struct ToleranceResult {
    var sleeps: [SleepFigure]
    var wakeups: [WakeupFigure]
}

enum ToleranceBench {
    static func run(_ config: ToleranceConfig, rng: inout SeededGenerator, failures: inout [String])
        -> ToleranceResult
    {
        let duration = Duration.nanoseconds(config.sleepFor)
        let tolerance = Duration.nanoseconds(config.sleepTolerance)
        var sleeps = [
            SleepFigure(name: "Task.sleep(for:tolerance:)", tolerance: tolerance),
            SleepFigure(name: "MonotonicClock().sleep(for:tolerance:)", tolerance: tolerance),
            SleepFigure(name: "Task.sleep(for:)", tolerance: nil),
            SleepFigure(name: "MonotonicClock().sleep(for:)", tolerance: nil),
        ]
        progress("tolerance: \(config.sleeps) sleeps of \(micros(config.sleepFor)) us per kind, interleaved")
        for i in 0..<config.sleeps {
            for j in 0..<sleeps.count {
                let s = (i + j) % sleeps.count
                guard sleeps[s].failed == nil else { continue }
                do {
                    let late = try sleepOnce(stdlib: s % 2 == 0, duration, sleeps[s].tolerance)
                    sleeps[s].samples.append(late)
                } catch {
                    sleeps[s].failed = "\(error)"
                    failures.append("tolerance \(sleeps[s].name): \(error)")
                }
            }
        }

        var wakeups = [
            WakeupFigure(name: "TimerKit LoopTimer tolerance", toleranceNs: config.timerTolerance),
            WakeupFigure(name: "DispatchSourceTimer leeway", toleranceNs: config.timerTolerance),
            WakeupFigure(name: "TimerKit LoopTimer tolerance", toleranceNs: 0),
            WakeupFigure(name: "DispatchSourceTimer leeway", toleranceNs: 0),
        ]
        progress("tolerance: \(config.timers) timers in [\(micros(config.minDeadline)), \(micros(config.maxDeadline))] us, \(config.reps) reps per kind")
        for rep in 0..<config.reps {
            for j in 0..<wakeups.count {
                let w = (rep + j) % wakeups.count
                guard wakeups[w].failed == nil else { continue }
                let deadlines = (0..<config.timers).map { _ in
                    rng.next(in: config.minDeadline, config.maxDeadline + 1)
                }
                do {
                    if w % 2 == 0 {
                        try timerKitWakeups(deadlines, wakeups[w].toleranceNs, &wakeups[w])
                    } else {
                        try dispatchWakeups(deadlines, wakeups[w].toleranceNs, &wakeups[w])
                    }
                } catch {
                    wakeups[w].failed = "\(error)"
                    failures.append("tolerance \(wakeups[w].name) \(micros(wakeups[w].toleranceNs)) us: \(error)")
                }
            }
        }
        return ToleranceResult(sleeps: sleeps, wakeups: wakeups)
    }

    /// One sleep for `duration`; how much longer than `duration` it took.
    private static func sleepOnce(stdlib: Bool, _ duration: Duration, _ tolerance: Duration?) throws -> Int64 {
        let box = LateBox()
        let done = DispatchSemaphore(value: 0)
        let task = Task.detached {
            defer { done.signal() }
            do {
                if stdlib {
                    let clock = ContinuousClock()
                    let start = clock.now
                    try await Task.sleep(for: duration, tolerance: tolerance, clock: clock)
                    box.late = (clock.now - start - duration).nanoseconds
                } else {
                    let clock = MonotonicClock()
                    let start = clock.now
                    try await clock.sleep(for: duration, tolerance: tolerance)
                    box.late = (clock.now - start - duration).nanoseconds
                }
            } catch {
                box.error = error
            }
        }
        if done.wait(timeout: .now() + .seconds(5)) == .timedOut {
            task.cancel()
            done.wait()
            throw SideFailure("the sleep did not end within 5 s")
        }
        if let error = box.error { throw error }
        return box.late
    }

    private static func timerKitWakeups(_ deadlines: [Int64], _ tolerance: Int64, _ figure: inout WakeupFigure) throws {
        let loop = try TimerLoop()
        let state = FireLog(expected: deadlines.count)
        let switches0 = ContextSwitches.allThreads()
        let main0 = ContextSwitches.mainThread()
        let before = loop.statistics
        let start = monotonicNanoseconds()
        for deadline in deadlines {
            let due = start + deadline
            let timer = try LoopTimer(
                fireAt: .nanoseconds(due), tolerance: .nanoseconds(tolerance)
            ) { _, _ in
                let now = monotonicNanoseconds()
                if state.record(now - due) { loop.stop() }
            }
            try loop.add(timer)
        }
        _ = try loop.run(until: MonotonicClock.Instant(offset: .nanoseconds(start + 5_000_000_000)))
        let after = loop.statistics
        let switches1 = ContextSwitches.allThreads()
        let main1 = ContextSwitches.mainThread()
        guard state.count == deadlines.count else {
            throw SideFailure("\(state.count) of \(deadlines.count) timers fired within 5 s")
        }
        figure.loopWakeups.append(Int64(after.wakeups - before.wakeups))
        figure.contextSwitches.append(switches1 - switches0)
        figure.mainThreadSwitches.append(main1 - main0)
        figure.lateness += state.lateness
        figure.early += state.lateness.filter { $0 < 0 }.count
    }

    private static func dispatchWakeups(_ deadlines: [Int64], _ leeway: Int64, _ figure: inout WakeupFigure) throws {
        let queue = DispatchQueue(label: "timerkit.bench.leeway")
        let state = FireLog(expected: deadlines.count)
        let done = DispatchSemaphore(value: 0)
        var sources: [DispatchSourceTimer] = []
        sources.reserveCapacity(deadlines.count)
        let switches0 = ContextSwitches.allThreads()
        let main0 = ContextSwitches.mainThread()
        let before = monotonicNanoseconds()
        let uptime = DispatchTime.now().uptimeNanoseconds
        let start = monotonicNanoseconds()
        let offset = before + (start - before) / 2 - Int64(uptime)
        for deadline in deadlines {
            let due = start + deadline
            let source = DispatchSource.makeTimerSource(queue: queue)
            source.setEventHandler {
                let now = monotonicNanoseconds()
                if state.record(now - due) { done.signal() }
            }
            source.schedule(
                deadline: DispatchTime(uptimeNanoseconds: UInt64(due - offset)),
                leeway: .nanoseconds(Int(leeway)))
            source.resume()
            sources.append(source)
        }
        let timedOut = done.wait(timeout: .now() + .seconds(5)) == .timedOut
        let switches1 = ContextSwitches.allThreads()
        let main1 = ContextSwitches.mainThread()
        for source in sources { source.cancel() }
        queue.sync {}
        if timedOut {
            throw SideFailure("\(state.count) of \(deadlines.count) sources fired within 5 s")
        }
        figure.contextSwitches.append(switches1 - switches0)
        figure.mainThreadSwitches.append(main1 - main0)
        figure.lateness += state.lateness
        figure.early += state.lateness.filter { $0 < 0 }.count
    }
}

/// Fires of many timers, recorded on one thread at a time.
final class FireLog: @unchecked Sendable {
    let expected: Int
    private(set) var lateness: [Int64] = []
    var count: Int { lateness.count }

    init(expected: Int) {
        self.expected = expected
        lateness.reserveCapacity(expected)
    }

    /// True once every expected timer has fired.
    func record(_ late: Int64) -> Bool {
        lateness.append(late)
        return lateness.count == expected
    }
}

final class LateBox: @unchecked Sendable {
    var late: Int64 = 0
    var error: (any Error)?
}
