import Dispatch
import Testing
import TimerKit

// QueueTimer: handlers on a DispatchQueue, fired by a TimerLoop. Exact
// behaviour (fire times, coalescing, merged fire counts, the lifecycle and
// each misuse) on manual loops, whose fires put the handler on the queue
// during `advance`; the tests then wait for the queue with `sync`. On the
// real clocks only "fired", "never early" and order are checked.

/// What a timer's handlers did, in order: "fire <count> @<loop time>" and
/// "cancel".
private final class Journal: Sendable {
    let entries = Locked<[String]>([])

    func record(_ entry: String) { entries.withLock { $0.append(entry) } }

    /// An event handler that records each run with the loop's time.
    func handler(_ loop: TimerLoop) -> @Sendable (UInt64) -> Void {
        { fires in self.record("fire \(fires) @\(loop.time)") }
    }
}

/// A serial queue and a manual loop with one timer on them.
private struct Rig {
    let loop: TimerLoop
    let queue = DispatchQueue(label: "QueueTimerTests")
    let journal = Journal()

    init() throws {
        loop = try TimerLoop.manual()
    }

    func makeTimer() throws -> QueueTimer {
        let timer = try QueueTimer(queue: queue, loop: loop)
        timer.setEventHandler(journal.handler(loop))
        let journal = journal
        timer.setCancelHandler { journal.record("cancel") }
        return timer
    }

    /// Moves time by `step`s of 100 ms until `duration` has passed. The
    /// queue is held during each step and let run after it, so that each
    /// handler run reads the time at the end of the step that fired it (a
    /// step's pass at its end fires what is due then, leeway or not).
    func advance(by duration: Duration, step: Duration = .milliseconds(100)) throws {
        var left = duration
        repeat {
            let span = min(step, left)
            queue.suspend()
            defer {
                queue.resume()
                queue.sync {}
            }
            try loop.advance(by: span)
            left -= span
        } while left > .zero
    }

    var entries: [String] { journal.entries.value }
}

@Suite("QueueTimer")
struct QueueTimerTests {
    @Test("setEventHandler, setCancelHandler and cancel let go of handlers outside the timer's lock")
    func handlersReleasedOutsideTheLock() throws {
        let loop = try TimerLoop.manual()
        let queue = DispatchQueue(label: "QueueTimerTests.release")
        // An owner that cancels its timer in its deinit, held only by the
        // timer's handler: a timer that let go of the handler under its lock
        // would wait for itself forever. Each call runs on another thread
        // with a limit.
        final class Owner: Sendable {
            let timer: QueueTimer
            init(_ timer: QueueTimer) { self.timer = timer }
            deinit { timer.cancel() }
        }
        func returns(_ call: @escaping @Sendable () -> Void) -> Bool {
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async { call(); done.signal() }
            return done.wait(timeout: .now() + 30) == .success
        }
        func holding(_ owner: Owner) -> @Sendable (UInt64) -> Void { { _ in _ = owner } }
        func cancelHolding(_ owner: Owner) -> @Sendable () -> Void { { _ = owner } }
        let first = try QueueTimer(queue: queue, loop: loop)
        first.setEventHandler(holding(Owner(first)))
        #expect(returns { first.setEventHandler(nil) }, "setEventHandler(nil)")
        #expect(first.isCancelled, "the owner's deinit ran, and cancelled the timer")
        let second = try QueueTimer(queue: queue, loop: loop)
        second.setEventHandler(holding(Owner(second)))
        #expect(returns { second.cancel() }, "cancel()")
        let third = try QueueTimer(queue: queue, loop: loop)
        third.setCancelHandler(cancelHolding(Owner(third)))
        #expect(returns { third.setCancelHandler(nil) }, "setCancelHandler(nil)")
        #expect(third.isCancelled)
        queue.sync {}
    }

    // MARK: Firing on a manual loop

    @Test("a one-shot timer fires once, at its deadline, on the queue")
    func oneShotFiresAtDeadline() throws {
        let rig = try Rig()
        let timer = try rig.makeTimer()
        try timer.schedule(deadline: at(.milliseconds(1500)))
        try rig.advance(by: .seconds(1))
        #expect(rig.entries.isEmpty, "a timer fired before it was activated")
        try timer.activate()
        #expect(timer.nextDeadline == at(.milliseconds(1500)))
        try rig.advance(by: .seconds(3))
        #expect(rig.entries == ["fire 1 @1.5 seconds"])
        #expect(timer.nextDeadline == nil)
        #expect(rig.loop.statistics.pending == 0)
    }

    @Test("a deadline with a part of a nanosecond is due at the next whole nanosecond")
    func partOfANanosecond() throws {
        let rig = try Rig()
        let timer = try rig.makeTimer()
        try timer.schedule(deadline: at(.nanoseconds(3) / 2), repeating: .nanoseconds(5) / 2)
        try timer.activate()
        #expect(timer.nextDeadline == at(.nanoseconds(2)))
        try rig.advance(by: .nanoseconds(1))
        #expect(rig.entries.isEmpty, "fired at 1 ns, before its deadline of 1.5 ns")
        try rig.advance(by: .nanoseconds(1))
        #expect(rig.entries.count == 1)
        #expect(timer.nextDeadline == at(.nanoseconds(5)))
        timer.cancel()
    }

    @Test("a repeating timer fires on its grid and tells the handler when it was late")
    func repeatingStaysOnGrid() throws {
        let rig = try Rig()
        let timer = try rig.makeTimer()
        try timer.schedule(deadline: at(.seconds(1)), repeating: .seconds(1))
        try timer.activate()
        try rig.advance(by: .milliseconds(3500))
        #expect(rig.entries == ["fire 1 @1.0 seconds", "fire 1 @2.0 seconds", "fire 1 @3.0 seconds"])
        #expect(timer.nextDeadline == at(.seconds(4)))
        #expect(rig.loop.statistics.pending == 1)
        timer.cancel()
        #expect(timer.nextDeadline == nil)
    }

    @Test("leeway lets two timers share a wake-up; without it they take one each")
    func leewayCoalesces() throws {
        for leeway in [Duration.zero, .milliseconds(500)] {
            let rig = try Rig()
            let first = try rig.makeTimer()
            let second = try QueueTimer(queue: rig.queue, loop: rig.loop)
            let journal = rig.journal
            second.setEventHandler { fires in journal.record("second \(fires) @\(rig.loop.time)") }
            try first.schedule(deadline: at(.seconds(1)), leeway: leeway)
            try second.schedule(deadline: at(.milliseconds(1200)))
            try first.activate()
            try second.activate()
            let before = rig.loop.statistics.wakeups
            try rig.advance(by: .seconds(2), step: .seconds(2))
            let wakeups = rig.loop.statistics.wakeups - before
            #expect(rig.entries == ["fire 1 @2.0 seconds", "second 1 @2.0 seconds"])
            if leeway == .zero {
                #expect(wakeups == 2)
            } else {
                #expect(wakeups == 1, "a 500 ms leeway did not coalesce the two fires")
            }
        }
    }

    @Test("a timer on the wall clock fires when the wall clock reads its deadline")
    func wallDeadline() throws {
        let rig = try Rig()
        let timer = try rig.makeTimer()
        let deadline = rig.loop.now(.wall) + .seconds(2)
        try timer.schedule(wallDeadline: deadline, repeating: .seconds(2))
        try timer.activate()
        #expect(timer.nextWallDeadline == deadline)
        #expect(timer.nextDeadline == nil)
        try rig.advance(by: .seconds(5))
        #expect(rig.entries == ["fire 1 @2.0 seconds", "fire 1 @4.0 seconds"])
        timer.cancel()
    }

    @Test("rescheduling replaces the grid and drops the fires the handler has not had")
    func reschedule() throws {
        let rig = try Rig()
        let timer = try rig.makeTimer()
        try timer.schedule(deadline: at(.seconds(1)), repeating: .seconds(1))
        try timer.activate()
        try rig.advance(by: .seconds(2))
        timer.suspend()
        try rig.advance(by: .seconds(3))
        try timer.schedule(deadline: rig.loop.now(.monotonic) + .milliseconds(500),
                           repeating: .seconds(2))
        try timer.resume()
        try rig.advance(by: .seconds(3))
        #expect(rig.entries == [
            "fire 1 @1.0 seconds", "fire 1 @2.0 seconds", "fire 1 @5.5 seconds", "fire 1 @7.5 seconds",
        ])
        // Rescheduling an active timer takes effect at once.
        try timer.schedule(deadline: at(.seconds(20)))
        #expect(timer.nextDeadline == at(.seconds(20)))
        #expect(rig.loop.statistics.pending == 1)
        try rig.advance(by: .seconds(15))
        #expect(rig.entries.last == "fire 1 @20.0 seconds")
    }

    // MARK: Merged fires

    @Test("fires while suspended reach the first handler after resume, counted; the loop does not wake meanwhile")
    func firesWhileSuspended() throws {
        let rig = try Rig()
        let timer = try rig.makeTimer()
        try timer.schedule(deadline: at(.seconds(1)), repeating: .seconds(1), leeway: .milliseconds(100))
        try timer.activate()
        try rig.advance(by: .milliseconds(1500))
        timer.suspend()
        timer.suspend()
        #expect(rig.loop.statistics.pending == 0)
        let wakeups = rig.loop.statistics.wakeups
        try rig.advance(by: .seconds(5))
        #expect(rig.loop.statistics.wakeups == wakeups)
        try timer.resume()
        try rig.advance(by: .seconds(1))
        #expect(rig.entries == ["fire 1 @1.1 seconds"], "a handler ran while the timer was suspended")
        try timer.resume()
        // The grid points at 2 ... 7 s, fired at the next pass.
        try rig.loop.advance(by: .zero)
        rig.queue.sync {}
        #expect(rig.entries.last == "fire 6 @7.5 seconds")
        #expect(timer.nextDeadline == at(.seconds(8)))
        try rig.advance(by: .seconds(1))
        #expect(rig.entries.last == "fire 1 @8.1 seconds", "fired at 8 s + leeway")
        timer.cancel()
    }

    @Test("suspend and resume keep a grid that started at the beginning of time, ahead of every point fired")
    func resumeOnAGridFromTheStartOfTime() throws {
        // From Int64.min ns to 10 ns there are 2^62 + 6 points of 2 ns, and
        // 2^63 + 11 points of 1 ns: more than Int64.max.
        for (interval, fired) in [(Int64(2), "4611686018427387910"), (1, "9223372036854775819")] {
            let rig = try Rig()
            let timer = try rig.makeTimer()
            let start = MonotonicClock.Instant(offset: .nanoseconds(Int64.min))
            try timer.schedule(deadline: start, repeating: .nanoseconds(interval))
            try timer.activate()
            // The queue held meanwhile: the fires merge into one handler run.
            try rig.advance(by: .nanoseconds(10), step: .nanoseconds(10))
            #expect(rig.entries == ["fire \(fired) @1e-08 seconds"])
            let next = at(.nanoseconds(10 + interval))
            #expect(timer.nextDeadline == next)
            timer.suspend()
            try timer.resume()
            #expect(timer.nextDeadline == next, "resumed on the grid's next point")
            #expect(rig.loop.statistics.pending == 1)
            try rig.advance(by: .nanoseconds(interval), step: .nanoseconds(interval))
            #expect(rig.entries.count == 2)
            #expect(rig.entries.last == "fire 1 @\(Duration.nanoseconds(10 + interval))")
            timer.cancel()
        }
    }

    @Test("fires while the queue is busy reach one handler run, counted")
    func firesWhileQueueBlocked() throws {
        let rig = try Rig()
        let timer = try rig.makeTimer()
        try timer.schedule(deadline: at(.seconds(1)), repeating: .seconds(1))
        try timer.activate()
        let gate = DispatchSemaphore(value: 0)
        rig.queue.async { gate.wait() }
        try rig.loop.advance(by: .seconds(3))
        try rig.loop.advance(by: .seconds(1))
        gate.signal()
        rig.queue.sync {}
        #expect(rig.entries == ["fire 4 @4.0 seconds"])
        timer.cancel()
    }

    @Test("a handler never runs concurrently with itself, even on a concurrent queue")
    func notConcurrentWithItself() throws {
        let loop = try TimerLoop.manual()
        let queue = DispatchQueue(label: "concurrent", attributes: .concurrent)
        let timer = try QueueTimer(queue: queue, loop: loop)
        let running = Locked(0)
        let overlapped = Locked(false)
        let fires = Locked<UInt64>(0)
        timer.setEventHandler { count in
            let now = running.withLock { $0 += 1; return $0 }
            if now > 1 { overlapped.withLock { $0 = true } }
            sleepThread(.microseconds(200))
            fires.withLock { $0 += count }
            running.withLock { $0 -= 1 }
        }
        try timer.schedule(deadline: at(.milliseconds(1)), repeating: .milliseconds(1))
        try timer.activate()
        for _ in 0..<200 { try loop.advance(by: .milliseconds(1)) }
        #expect(waitUntil { fires.value == 200 }, "fires counted: \(fires.value) of 200")
        #expect(!overlapped.value)
        timer.cancel()
    }

    // MARK: Cancel

    @Test("after cancel returns no handler starts; one running finishes; the cancel handler runs once, after it")
    func cancelWhileHandlerRuns() throws {
        let rig = try Rig()
        let timer = try QueueTimer(queue: rig.queue, loop: rig.loop)
        let entered = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let journal = rig.journal
        timer.setEventHandler { fires in
            journal.record("start \(fires)")
            entered.signal()
            proceed.wait()
            journal.record("end")
        }
        timer.setCancelHandler { journal.record("cancel") }
        try timer.schedule(deadline: at(.seconds(1)), repeating: .seconds(1))
        try timer.activate()
        try rig.loop.advance(by: .seconds(1))
        entered.wait()
        // Fires while the handler runs would make a second run.
        try rig.loop.advance(by: .seconds(2))
        timer.cancel()
        try rig.loop.advance(by: .seconds(2))
        proceed.signal()
        rig.queue.sync {}
        #expect(rig.entries == ["start 1", "end", "cancel"])
        #expect(rig.loop.statistics.pending == 0)
    }

    @Test("cancelling twice does nothing: the cancel handler runs once")
    func cancelTwice() throws {
        let rig = try Rig()
        let timer = try rig.makeTimer()
        try timer.schedule(deadline: at(.seconds(1)), repeating: .seconds(1))
        try timer.activate()
        try rig.advance(by: .seconds(1))
        timer.cancel()
        #expect(timer.isCancelled)
        timer.cancel()
        try rig.advance(by: .seconds(3))
        #expect(rig.entries == ["fire 1 @1.0 seconds", "cancel"])
    }

    @Test("scheduling a cancelled timer throws cancelled and schedules nothing")
    func scheduleAfterCancel() throws {
        let rig = try Rig()
        let timer = try rig.makeTimer()
        timer.cancel()
        #expect(throws: TimerError.cancelled) {
            try timer.schedule(deadline: at(.seconds(1)))
        }
        #expect(throws: TimerError.cancelled) {
            try timer.schedule(wallDeadline: rig.loop.now(.wall) + .seconds(1))
        }
        // A bad argument is reported first, as the doc says.
        #expect(throws: TimerError.invalidInterval(.zero)) {
            try timer.schedule(deadline: at(.seconds(1)), repeating: .zero)
        }
        #expect(throws: TimerError.negativeTolerance(.seconds(-1))) {
            try timer.schedule(deadline: at(.seconds(1)), leeway: .seconds(-1))
        }
        try timer.activate()
        try timer.resume()
        timer.suspend()
        #expect(rig.loop.statistics.pending == 0)
        try rig.advance(by: .seconds(2))
        #expect(rig.entries == ["cancel"])
        #expect(TimerError.cancelled.description.contains("cancelled"))
    }

    @Test("handlers set after cancel are let go at once and never run")
    func handlersAfterCancel() throws {
        let rig = try Rig()
        let timer = try rig.makeTimer()
        timer.cancel()
        let freed = Locked(0)
        do {
            let watched = Watched { freed.withLock { $0 += 1 } }
            timer.setEventHandler { _ in _ = watched }
        }
        #expect(freed.value == 1)
        timer.setCancelHandler { rig.journal.record("late cancel") }
        rig.queue.sync {}
        #expect(rig.entries == ["cancel"])
    }

    // MARK: Misuse

    @Test("an unbalanced resume throws and changes nothing")
    func unbalancedResume() throws {
        let rig = try Rig()
        let timer = try rig.makeTimer()
        try timer.schedule(deadline: at(.seconds(1)), repeating: .seconds(1))
        try timer.activate()
        #expect(throws: TimerError.unbalancedResume) { try timer.resume() }
        timer.suspend()
        try timer.resume()
        #expect(throws: TimerError.unbalancedResume) { try timer.resume() }
        #expect(TimerError.unbalancedResume.description.contains("suspend"))
        try rig.advance(by: .seconds(2))
        #expect(rig.entries == ["fire 1 @1.0 seconds", "fire 1 @2.0 seconds"])
        // A suspension after the refused resume still needs its own resume.
        timer.suspend()
        try rig.advance(by: .seconds(1))
        #expect(rig.entries.count == 2)
        timer.cancel()
    }

    @Test("activating twice does nothing; resuming a timer never activated activates it")
    func activateTwice() throws {
        let rig = try Rig()
        let timer = try rig.makeTimer()
        try timer.schedule(deadline: at(.seconds(1)), repeating: .seconds(1))
        try timer.activate()
        try timer.activate()
        #expect(rig.loop.statistics.pending == 1)
        try rig.advance(by: .seconds(2))
        #expect(rig.entries == ["fire 1 @1.0 seconds", "fire 1 @2.0 seconds"])
        timer.cancel()

        let other = try rig.makeTimer()
        try other.schedule(deadline: at(.seconds(3)))
        try other.resume()
        try other.activate()
        #expect(rig.loop.statistics.pending == 1)
        try rig.advance(by: .seconds(1))
        #expect(rig.entries.suffix(2) == ["cancel", "fire 1 @3.0 seconds"])
    }

    @Test("a timer let go while suspended is cancelled and freed: cancel handler once, handlers released, loop empty")
    func releasedWhileSuspended() throws {
        let rig = try Rig()
        let freed = Locked(0)
        weak var weakTimer: QueueTimer?
        do {
            let timer = try QueueTimer(queue: rig.queue, loop: rig.loop)
            weakTimer = timer
            let watched = Watched { freed.withLock { $0 += 1 } }
            let journal = rig.journal
            timer.setEventHandler { fires in _ = watched; journal.record("fire \(fires)") }
            timer.setCancelHandler { journal.record("cancel") }
            try timer.schedule(deadline: at(.seconds(1)), repeating: .seconds(1))
            try timer.activate()
            try rig.advance(by: .seconds(1))
            timer.suspend()
            timer.suspend()
            try rig.advance(by: .seconds(2))
        }
        #expect(weakTimer == nil)
        try rig.advance(by: .seconds(2))
        #expect(rig.entries == ["fire 1", "cancel"])
        #expect(freed.value == 1, "the event handler was not let go")
        #expect(rig.loop.statistics.pending == 0)
    }

    @Test("a timer let go while active or inactive is cancelled: no more fires, the loop lets it go")
    func releasedWhileActiveOrInactive() throws {
        let rig = try Rig()
        do {
            let timer = try rig.makeTimer()
            try timer.schedule(deadline: at(.seconds(1)), repeating: .seconds(1))
            try timer.activate()
            try rig.advance(by: .seconds(1))
            #expect(rig.loop.statistics.pending == 1)
        }
        #expect(rig.loop.statistics.pending == 0)
        do {
            let timer = try rig.makeTimer()
            try timer.schedule(deadline: at(.seconds(2)))
        }
        try rig.advance(by: .seconds(3))
        #expect(rig.entries == ["fire 1 @1.0 seconds", "cancel", "cancel"])
    }

    @Test("bad schedules throw and leave the schedule in force")
    func badSchedules() throws {
        let rig = try Rig()
        let timer = try rig.makeTimer()
        try timer.schedule(deadline: at(.seconds(1)), repeating: .seconds(1))
        try timer.activate()
        #expect(throws: TimerError.invalidInterval(.zero)) {
            try timer.schedule(deadline: at(.seconds(5)), repeating: .zero)
        }
        #expect(throws: TimerError.negativeTolerance(.seconds(-1))) {
            try timer.schedule(deadline: at(.seconds(5)), leeway: .seconds(-1))
        }
        #expect(timer.nextDeadline == at(.seconds(1)))
        try rig.advance(by: .seconds(1))
        #expect(rig.entries == ["fire 1 @1.0 seconds"])
        timer.cancel()
    }

    // MARK: Real clocks

    @Test("on the shared loop: a repeating timer fires, never early, in order")
    func realMonotonic() throws {
        let queue = DispatchQueue(label: "QueueTimerTests.real")
        let timer = try QueueTimer(queue: queue)
        let start = MonotonicClock.now + .milliseconds(20)
        let interval = Duration.milliseconds(5)
        // (fires counted so far, time the handler ran)
        let runs = Locked<[(UInt64, MonotonicClock.Instant)]>([])
        timer.setEventHandler { fires in
            let now = MonotonicClock.now
            runs.withLock { runs in runs.append(((runs.last?.0 ?? 0) + fires, now)) }
        }
        try timer.schedule(deadline: start, repeating: interval, leeway: .milliseconds(1))
        try timer.activate()
        #expect(waitUntil { (runs.value.last?.0 ?? 0) >= 10 })
        timer.cancel()
        let seen = runs.value
        for (index, (total, time)) in seen.enumerated() {
            // The latest grid point counted must have come.
            let due = start + interval * Int(total - 1)
            #expect(time >= due, "run \(index) at \(time), before \(due)")
            if index > 0 { #expect(time >= seen[index - 1].1 && total > seen[index - 1].0) }
        }
    }

    @Test("on the shared loop: wall-clock and monotonic one-shots fire, never early, in deadline order")
    func realOneShots() throws {
        let queue = DispatchQueue(label: "QueueTimerTests.order")
        let log = Locked<[String]>([])
        // The earlier timer is set up and added first: a stall of the test's
        // thread anywhere in here only moves the later one later.
        let deadline = MonotonicClock.now + .milliseconds(10)
        let monotonic = try QueueTimer(queue: queue)
        monotonic.setEventHandler { _ in
            log.withLock { $0.append(MonotonicClock.now >= deadline ? "monotonic" : "monotonic early") }
        }
        try monotonic.schedule(deadline: deadline)
        try monotonic.activate()
        let wallDeadline = WallClock.now + .milliseconds(30)
        let wall = try QueueTimer(queue: queue)
        wall.setEventHandler { _ in
            log.withLock { $0.append(WallClock.now >= wallDeadline ? "wall" : "wall early") }
        }
        try wall.schedule(wallDeadline: wallDeadline)
        try wall.activate()
        #expect(waitUntil { log.value.count == 2 })
        #expect(log.value == ["monotonic", "wall"])
    }
}
