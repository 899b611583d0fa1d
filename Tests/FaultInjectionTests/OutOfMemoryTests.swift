import CAllocationFaults
import Testing
import TimerKit

// The Swift facade out of memory, at every allocation the C core makes in a
// scenario on a manual loop: a failure throws TimerError.system with ENOMEM,
// made again the call succeeds, and what the timers and the frame ticker do
// is exactly what they do when nothing fails; every timer object is freed.

/// What the scenario did: its actions' calls, and how many calls failed
/// for want of memory (and were made again).
struct Outcome: Equatable {
    var log: [String] = []
    var pending: [UInt64] = []
    var outOfMemory = 0
    var otherErrors: [String] = []
}

/// Makes `body` again once if it failed for want of memory.
func retrying<Result>(
    _ outcome: Locked<Outcome>, _ body: () throws(TimerError) -> Result
) -> Result? {
    do {
        return try body()
    } catch {
        if case .system(let failure) = error, failure.errno == .noMemory {
            outcome.withLock { $0.outOfMemory += 1 }
            do {
                return try body()
            } catch {
                outcome.withLock { $0.otherErrors.append("made again: \(error)") }
                return nil
            }
        }
        outcome.withLock { $0.otherErrors.append("\(error)") }
        return nil
    }
}

/// The scenario: timers in modes, a frame ticker, advances and a run, on a
/// manual loop. Returns weak references to the timers it made, to check
/// that they are freed.
func scenario(_ outcome: Locked<Outcome>) -> [WeakTimer] {
    guard let loop = retrying(outcome, { () throws(TimerError) in try TimerLoop.manual() }) else {
        return []
    }
    var weak: [WeakTimer] = []
    var timers: [LoopTimer<MonotonicClock>] = []
    for index in 0..<150 {
        let mode: LoopMode = index % 5 == 0 ? .tracking : .default
        let interval: Duration? = index % 4 == 0 ? .milliseconds(7 + index % 5) : nil
        let timer = retrying(outcome) { () throws(TimerError) in
            try loop.schedule(
                after: .milliseconds(1 + (index * 37) % 100), repeating: interval, in: mode
            ) { _, missed in
                outcome.withLock { $0.log.append("t\(index) \(missed) @\(loop.time)") }
            }
        }
        if let timer {
            timers.append(timer)
            weak.append(WeakTimer(timer))
        }
    }
    for timer in timers.prefix(30) {
        _ = retrying(outcome) { () throws(TimerError) in try loop.add(timer, forMode: .common) }
    }
    outcome.withLock { $0.pending.append(loop.statistics.pending) }
    let ticker = retrying(outcome) { () throws(TimerError) in
        try FrameTicker(on: loop, rate: FrameRateRange(fixed: 100)) { _, frame in
            outcome.withLock { $0.log.append("frame \(frame.droppedFrames) @\(loop.time)") }
        }
    }
    // Time moves in .tracking (the default mode's timers wait), then in
    // .default, then a run with a deadline.
    for (mode, target) in [(LoopMode.tracking, Duration.milliseconds(40)), (.default, .milliseconds(120))] {
        _ = retrying(outcome) { () throws(TimerError) in
            try loop.advance(by: target - loop.time, mode: mode)
        }
        outcome.withLock { $0.pending.append(loop.statistics.pending) }
    }
    _ = retrying(outcome) { () throws(TimerError) in
        try loop.run(until: loop.now(.monotonic) + .milliseconds(50))
    }
    outcome.withLock { $0.pending.append(loop.statistics.pending) }
    for timer in timers { timer.invalidate() }
    ticker?.invalidate()
    outcome.withLock { $0.pending.append(loop.statistics.pending) }
    return weak
}

final class WeakTimer: @unchecked Sendable {
    weak var timer: AnyLoopTimer?
    init(_ timer: AnyLoopTimer) { self.timer = timer }
}

@Suite("Out of memory in the C core, seen from Swift", .serialized)
struct OutOfMemoryTests {
    @Test("every allocation of a scenario fails once; the outcome is the unfailed one's")
    func everyAllocation() {
        let golden = Locked(Outcome())
        allocation_faults_arm(0)
        let goldenTimers = scenario(golden)
        allocation_faults_disarm()
        let allocations = allocation_faults_count()
        #expect(allocations >= 10)  // the wrapper sees the core's allocations
        #expect(golden.value.outOfMemory == 0)
        #expect(golden.value.otherErrors.isEmpty)
        #expect(golden.value.log.count >= 150)
        #expect(goldenTimers.count == 150)
        #expect(goldenTimers.allSatisfy { $0.timer == nil })

        var failed = 0
        for k in 1...(allocations + 1) {
            let outcome = Locked(Outcome())
            allocation_faults_arm(k)
            let timers = scenario(outcome)
            allocation_faults_disarm()
            let value = outcome.value
            if k <= allocations {
                #expect(allocation_faults_refused() == 1, "k=\(k)")
                if value.outOfMemory == 1 { failed += 1 }
            }
            #expect(value.otherErrors.isEmpty, "k=\(k): \(value.otherErrors)")
            #expect(value.log == golden.value.log, "k=\(k)")
            #expect(value.pending == golden.value.pending, "k=\(k)")
            #expect(timers.count == 150, "k=\(k)")
            #expect(timers.allSatisfy { $0.timer == nil }, "k=\(k): a timer was not freed")
        }
        // Each refused allocation came back as TimerError.system(ENOMEM).
        #expect(failed == allocations)
        print("out of memory: \(allocations) allocations, each failed once; \(failed) calls threw ENOMEM and succeeded when made again; \(golden.value.log.count) actions")
    }

    @Test("a timer whose schedule fails for want of memory is freed; one that an add fails for stays valid, unscheduled, and can be added")
    func failedScheduleLetsGo() throws {
        // A loop's first timer makes its table and heap: count what it allocates.
        let counting = try TimerLoop.manual()
        allocation_faults_arm(0)
        _ = try counting.schedule(after: .seconds(1)) { _, _ in }
        allocation_faults_disarm()
        let allocations = allocation_faults_count()
        #expect(allocations >= 2)
        for k in 1...allocations {
            // loop.schedule: the timer it made is gone with what its action holds.
            let loop = try TimerLoop.manual()
            weak var weakToken: Token?
            do {
                let token = Token()
                weakToken = token
                allocation_faults_arm(k)
                defer { allocation_faults_disarm() }
                _ = try loop.schedule(after: .seconds(1)) { _, _ in _ = token }
                Issue.record("k=\(k): the schedule did not fail")
            } catch {
                #expect(error == .system(SystemError(errno: .noMemory, function: "tk_loop_schedule_record")), "k=\(k)")
            }
            #expect(weakToken == nil, "k=\(k): the timer of a failed schedule was not freed")
            #expect(loop.statistics.pending == 0, "k=\(k)")
            // loop.add, on a loop of its own (its first timer too): the timer
            // is as it was, and goes in when added again.
            let addLoop = try TimerLoop.manual()
            let timer = try LoopTimer(after: .seconds(2)) { _, _ in }
            allocation_faults_arm(k)
            #expect(throws: TimerError.self, "k=\(k)") { try addLoop.add(timer) }
            allocation_faults_disarm()
            #expect(timer.isValid && timer.fireDate == nil, "k=\(k)")
            try addLoop.add(timer)
            #expect(timer.fireDate == addLoop.now(.monotonic) + .seconds(2), "k=\(k)")
            #expect(addLoop.statistics.pending == 1, "k=\(k)")
            timer.invalidate()
        }
    }
}

/// An object to watch for being freed.
final class Token: Sendable {}
