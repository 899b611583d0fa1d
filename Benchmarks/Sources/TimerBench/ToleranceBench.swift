import Dispatch
import Foundation
import TimerKit

// Part 3a: what tolerance does to one sleep. How late a 5 ms sleep with 5 ms
// tolerance ends: Task.sleep (the standard library on Linux ignores the
// tolerance) against TimerKit's MonotonicClock, which arms its timer at
// deadline + tolerance; each also without tolerance, for reference.
// (Part 3b, many timers, is CoalescingBench.)

struct SleepFigure {
    var name: String
    var tolerance: Duration?
    var samples: [Int64] = []
    var failed: String?
    var summary: Summary { Summary(samples) }
}

struct ToleranceConfig {
    var sleeps: Int
    var sleepFor: Int64 = 5_000_000
    var sleepTolerance: Int64 = 5_000_000
}

struct ToleranceResult {
    var sleeps: [SleepFigure]
}

enum ToleranceBench {
    static func run(_ config: ToleranceConfig, failures: inout [String])
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

        return ToleranceResult(sleeps: sleeps)
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
            // Bounded, as TaskWaiter: a starved executor must not hang the run.
            _ = done.wait(timeout: .now() + .seconds(10))
            throw SideFailure("the sleep did not end within 5 s")
        }
        if let error = box.error { throw error }
        return box.late
    }
}

final class LateBox: @unchecked Sendable {
    var late: Int64 = 0
    var error: (any Error)?
}
