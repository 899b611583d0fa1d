import Testing
import TimerKit

// ManualClock: a Clock for tests, moved by advance, resuming sleeps in
// deadline order without any real waiting.

@Suite("ManualClock")
struct ManualClockTests {
    @Test("a sleep resumes when the clock is advanced to its deadline")
    func sleepResumes() async throws {
        let clock = try ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(60)); return clock.now }
        await clock.waitForSleepers(1)
        #expect(clock.pendingSleeps == 1)
        #expect(try clock.advance(by: .seconds(59)) == 0)
        #expect(try clock.advance(by: .seconds(1)) == 1)
        #expect(try await task.value >= ManualClock.Instant(offset: .seconds(60)))
        #expect(clock.pendingSleeps == 0)
        #expect(clock.loop.statistics.pending == 0)
    }

    @Test("sleeps resume in deadline order within one advance")
    func deadlineOrder() async throws {
        let clock = try ManualClock()
        let deadlines: [Int64] = [5, 1, 4, 2, 3]
        let tasks = deadlines.map { seconds in
            Task { try await clock.sleep(until: .init(offset: .seconds(seconds))) }
        }
        await clock.waitForSleepers(deadlines.count)
        // Probes half a second after each deadline record how many sleeps are left.
        let left = Locked<[Int]>([])
        for seconds in 1...5 {
            try clock.loop.schedule(after: .milliseconds(seconds * 1000 + 500)) { _, _ in
                left.withLock { $0.append(clock.pendingSleeps) }
            }
        }
        #expect(try clock.advance(by: .seconds(10)) == 10)
        #expect(left.value == [4, 3, 2, 1, 0])
        for task in tasks { try await task.value }
        #expect(clock.now == ManualClock.Instant(offset: .seconds(10)))
    }

    @Test("advancing step by step resumes exactly the sleeps that are due")
    func stepByStep() async throws {
        let clock = try ManualClock(start: .init(offset: .seconds(100)))
        let tasks = (1...3).map { n in
            Task { try await clock.sleep(for: .seconds(n)); return n }
        }
        await clock.waitForSleepers(3)
        for n in 1...3 {
            #expect(try clock.advance(to: .init(offset: .seconds(100 + Int64(n)))) == 1)
            #expect(try await tasks[n - 1].value == n)
            #expect(clock.pendingSleeps == 3 - n)
        }
        // Advancing to an instant that is not later does nothing.
        #expect(try clock.advance(to: .init(offset: .seconds(50))) == 0)
        #expect(clock.now == .init(offset: .seconds(103)))
    }

    @Test("a negative tolerance counts as none: the sleep ends at its deadline, not before")
    func negativeTolerance() async throws {
        let clock = try ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(10), tolerance: .seconds(-5)); return clock.now }
        await clock.waitForSleepers(1)
        #expect(try clock.advance(by: .seconds(9)) == 0)
        #expect(clock.pendingSleeps == 1)
        #expect(try clock.advance(by: .seconds(1)) == 1)
        #expect(try await task.value == ManualClock.Instant(offset: .seconds(10)))
    }

    @Test("sleeps with tolerance share one wake-up")
    func toleranceSharesWakeups() async throws {
        let clock = try ManualClock()
        let first = Task { try await clock.sleep(for: .seconds(1), tolerance: .seconds(2)) }
        let second = Task { try await clock.sleep(for: .seconds(2)) }
        await clock.waitForSleepers(2)
        #expect(try clock.advance(by: .seconds(5)) == 2)
        #expect(clock.loop.statistics.wakeups == 1)
        try await first.value
        try await second.value
    }

    @Test("waitForSleepers returns once enough tasks sleep, also when called first")
    func waitForSleepers() async throws {
        let clock = try ManualClock()
        await clock.waitForSleepers(0)
        let waiter = Task { await clock.waitForSleepers(3); return clock.pendingSleeps }
        let sleepers = (0..<3).map { _ in Task { try await clock.sleep(for: .seconds(1)) } }
        #expect(await waiter.value >= 3)
        try clock.advance(by: .seconds(1))
        for sleeper in sleepers { try await sleeper.value }
        #expect(clock.pendingSleeps == 0)
    }

    @Test("advancing from a timer action on the clock's loop throws busy")
    func advanceFromActionIsBusy() throws {
        let clock = try ManualClock()
        let result = Locked<TimerError?>(nil)
        try clock.loop.schedule(after: .seconds(1)) { _, _ in
            do throws(TimerError) {
                try clock.advance(by: .seconds(1))
            } catch {
                result.withLock { $0 = error }
            }
        }
        #expect(try clock.advance(by: .seconds(1)) == 1)
        #expect(result.value == .busy)
        #expect(clock.now == .init(offset: .seconds(1)))
        #expect(throws: TimerError.system(SystemError(errno: .invalidArgument, function: "tk_loop_advance"))) {
            try clock.advance(by: .seconds(-1))
        }
    }

    @Test("a callback that sets the monotonic clock forward during an advance uses up that much of the span; the other clocks stay where the span's steps took them")
    func callbackMovesTimeDuringAnAdvance() throws {
        let loop = try TimerLoop.manual()
        let fires = Locked<[String]>([])
        try loop.schedule(after: .seconds(1)) { _, _ in
            // The callback's work takes 5 s.
            try? loop.setManualTime(to: loop.now(.monotonic) + .seconds(5))
        }
        try loop.schedule(after: .seconds(3)) { _, _ in
            fires.withLock { $0.append("3 s timer at \(loop.now(.monotonic).offset)") }
        }
        try loop.schedule(after: .seconds(7)) { _, _ in fires.withLock { $0.append("7 s timer") } }
        #expect(try loop.advance(by: .seconds(2)) == 2)
        // Due by then: the 3 s timer fires late, at 6 s; the 7 s one waits.
        #expect(fires.value == ["3 s timer at 6.0 seconds"])
        #expect(loop.now(.monotonic) == MonotonicClock.Instant(offset: .seconds(6)))
        #expect(loop.now(.boot) == BootClock.Instant(offset: .seconds(1)))
        // An advance moves every clock: the next one goes from there.
        #expect(try loop.advance(by: .seconds(1)) == 1)
        #expect(fires.value.last == "7 s timer")
        #expect(loop.now(.boot) == BootClock.Instant(offset: .seconds(2)))
    }

    @Test("a cancelled sleep throws CancellationError and is no longer counted")
    func cancelledSleep() async throws {
        let clock = try ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(10)) }
        await clock.waitForSleepers(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.pendingSleeps == 0)
        #expect(clock.loop.statistics.pending == 0)
        #expect(try clock.advance(by: .seconds(20)) == 0)
    }

    @Test("a sleep in an already cancelled task throws at once and is never counted")
    func sleepInCancelledTask() async throws {
        let clock = try ManualClock()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(10))
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.loop.statistics.pending == 0)
        #expect(clock.pendingSleeps == 0, "pendingSleeps counts a sleep that never waited")
    }

    @Test("works through the Clock protocol, e.g. Task.sleep(for:clock:)")
    func clockProtocol() async throws {
        let clock = try ManualClock()
        #expect(clock.minimumResolution == .nanoseconds(1))
        let task = Task { try await Task.sleep(for: .milliseconds(1500), clock: clock) }
        await clock.waitForSleepers(1)
        try clock.advance(by: .seconds(2))
        try await task.value
        #expect(clock.now.offset == .seconds(2))
    }

    @Test("advances from several threads take turns: none is refused, none is lost")
    func concurrentAdvancesTakeTurns() throws {
        let clock = try ManualClock()
        let fired = Locked(0)
        let timer = try clock.loop.schedule(after: .milliseconds(1), repeating: .milliseconds(1)) {
            _, missed in fired.withLock { $0 += 1 + Int(missed) }
        }
        let refused = Locked<[TimerError]>([])
        runThreads(4) { _ in
            for _ in 0..<500 {
                do throws(TimerError) {
                    try clock.advance(by: .milliseconds(1))
                } catch {
                    refused.withLock { $0.append(error) }
                }
            }
        }
        timer.invalidate()
        #expect(refused.value.count == 0, "refused: \(refused.value.first.map { "\($0)" } ?? "")")
        #expect(clock.now == ManualClock.Instant(offset: .seconds(2)))
        #expect(fired.value == 2_000)
    }

    @Test("advance(to:) from several threads: reading the time and moving it are one step")
    func concurrentAdvancesToAnInstant() throws {
        let clock = try ManualClock()
        // A slow action at 5 s holds the first advance while others arrive.
        try clock.loop.schedule(after: .seconds(5)) { _, _ in sleepThread(.milliseconds(50)) }
        let target = ManualClock.Instant(offset: .seconds(10))
        runThreads(4) { _ in _ = try? clock.advance(to: target) }
        #expect(clock.now == target)
    }

    @Test("advance(to:) an instant more than Int64.max ns ahead gets there, firing what comes before")
    func advanceFurtherThanTheLongestSpan() throws {
        let clock = try ManualClock(start: ManualClock.Instant(offset: .nanoseconds(-10)))
        let end = ManualClock.Instant(offset: .nanoseconds(Int64.max - 1))
        let fired = Locked<[ManualClock.Instant]>([])
        for offset in [Int64.max - 20, Int64.max - 5] {
            try clock.loop.add(LoopTimer(fireAt: ManualClock.Instant(offset: .nanoseconds(offset))) {
                _, _ in fired.withLock { $0.append(clock.now) }
            })
        }
        #expect(try clock.advance(to: end) == 2)
        #expect(clock.now == end)
        let expected: [Duration] = [.nanoseconds(Int64.max - 20), .nanoseconds(Int64.max - 5)]
        let offsets: [Duration] = fired.value.map(\.offset)
        #expect(offsets == expected)
    }

    @Test("advance(by:) further than the longest span moves the whole way, every clock")
    func advanceByMoreThanTheLongestSpan() throws {
        let clock = try ManualClock(start: ManualClock.Instant(offset: .nanoseconds(-10)))
        let fired = Locked<[ManualClock.Instant]>([])
        // The second is past where one span of Int64.max ns from -10 ends.
        for offset in [Int64.max - 20, Int64.max - 3] {
            try clock.loop.add(LoopTimer(fireAt: ManualClock.Instant(offset: .nanoseconds(offset))) {
                _, _ in fired.withLock { $0.append(clock.now) }
            })
        }
        #expect(try clock.advance(by: .nanoseconds(Int64.max) + .nanoseconds(8)) == 2)
        #expect(clock.now == ManualClock.Instant(offset: .nanoseconds(Int64.max - 2)))
        let expected: [Duration] = [.nanoseconds(Int64.max - 20), .nanoseconds(Int64.max - 3)]
        let offsets: [Duration] = fired.value.map(\.offset)
        #expect(offsets == expected)
        // From the wall clock's lowest reading, the longest Duration takes it
        // to its highest, as it takes the others.
        let loop = try TimerLoop.manual()
        try loop.setManualTime(to: WallClock.Instant(offset: .nanoseconds(Int64.min)))
        #expect(try loop.advance(by: .seconds(Int64.max)) == 0)
        #expect(loop.now(.wall) == WallClock.Instant(offset: .nanoseconds(Int64.max)))
        #expect(loop.now(.monotonic) == MonotonicClock.Instant(offset: .nanoseconds(Int64.max)))
    }

    @Test("advance(to:) an instant between two nanoseconds stops at the earlier one, before the origin too")
    func advanceToAPartOfANanosecond() throws {
        let clock = try ManualClock(start: ManualClock.Instant(offset: .nanoseconds(-10)))
        let between = ManualClock.Instant(offset: .nanoseconds(-3) / 2)  // -1.5 ns
        let fired = Locked(0)
        try clock.loop.add(LoopTimer(fireAt: between) { _, _ in fired.withLock { $0 += 1 } })
        #expect(try clock.advance(to: between) == 0)
        #expect(clock.now == ManualClock.Instant(offset: .nanoseconds(-2)))  // not past -1.5
        #expect(try clock.advance(to: ManualClock.Instant(offset: .nanoseconds(-1))) == 1)
        #expect(fired.value == 1)
        #expect(try clock.advance(to: ManualClock.Instant(offset: .nanoseconds(3) / 2)) == 0)
        #expect(clock.now == ManualClock.Instant(offset: .nanoseconds(1)))
        // A run to such an instant, and setting the clock to one, alike.
        let loop = try TimerLoop.manual(startingAt: .nanoseconds(-10))
        try loop.run(until: MonotonicClock.Instant(offset: .nanoseconds(-7) / 2))  // -3.5 ns
        #expect(loop.now(.monotonic) == MonotonicClock.Instant(offset: .nanoseconds(-4)))
        try loop.setManualTime(to: BootClock.Instant(offset: .nanoseconds(-5) / 2))  // -2.5 ns
        #expect(loop.now(.boot) == BootClock.Instant(offset: .nanoseconds(-3)))
        // A clock that starts at such an instant starts at the nanosecond before.
        let started = try ManualClock(start: ManualClock.Instant(offset: .nanoseconds(-3) / 2))
        #expect(started.now == ManualClock.Instant(offset: .nanoseconds(-2)))
    }

    @Test("a timer on a ManualClock's instants goes only to a manual loop")
    func manualTimersNeedManualLoops() throws {
        let clock = try ManualClock()
        let timer = try LoopTimer(fireAt: clock.now + .seconds(60)) { _, _ in }
        #expect(throws: TimerError.notManual) { try TimerLoop().add(timer) }
        #expect(timer.isValid)
        try clock.loop.add(timer)
        #expect(timer.fireDate == ManualClock.Instant(offset: .seconds(60)))
        #expect(try clock.run(until: clock.now + .seconds(60)) == .timedOut)
        #expect(!timer.isValid)
        #expect(clock.now == ManualClock.Instant(offset: .seconds(60)))
    }

    @Test("a sleep on a manual loop until an instant its clock has reached returns at once",
          .timeLimit(.minutes(5)))
    func loopSleepUntilNow() async throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5))
        // Nothing advances the loop here: a sleep that waited for a pass would never end.
        try await loop.sleep(until: loop.now(.monotonic))
        try await loop.sleep(until: BootClock.Instant(offset: .seconds(1)))
        try await loop.sleep(until: loop.now(.wall) - .seconds(1), tolerance: .seconds(1))
        #expect(loop.statistics.pending == 0)
    }

    @Test("waitForSleepers returns when its task is cancelled, before or while it waits")
    func waitForSleepersCancelled() async throws {
        let clock = try ManualClock()
        let returned = Locked(0)
        // No sleep ever comes: only the cancel can end these waits.
        let waiting = Task {
            await clock.waitForSleepers(1)
            returned.withLock { $0 += 1 }
        }
        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await clock.waitForSleepers(1)
            returned.withLock { $0 += 1 }
        }
        // Waited for with a limit: a wait that ignored the cancel would never end.
        let endedFirst = await waitUntilAsync(.seconds(60)) { returned.value == 1 }
        #expect(endedFirst, "a waitForSleepers called cancelled never returned")
        // The first has gone to wait (or will find itself cancelled).
        waiting.cancel()
        let ended = await waitUntilAsync(.seconds(60)) { returned.value == 2 }
        #expect(ended, "a cancelled waitForSleepers never returned")
        guard ended && endedFirst else { return }
        _ = await (waiting.value, cancelledFirst.value)
        // The waits left nothing behind: a later one is served as before.
        let served = Task { await clock.waitForSleepers(1) }
        let sleeper = Task { try await clock.sleep(for: .seconds(1)) }
        await served.value
        #expect(clock.pendingSleeps == 1)
        try clock.advance(by: .seconds(1))
        try await sleeper.value
    }

    @Test("a sleep until an instant the clock has reached returns at once")
    func sleepUntilNow() async throws {
        let clock = try ManualClock(start: ManualClock.Instant(offset: .seconds(5)))
        try await clock.sleep(until: clock.now)
        try await clock.sleep(until: ManualClock.Instant(offset: .seconds(1)))
        #expect(clock.pendingSleeps == 0)
    }

    @Test("at the end of the clock's range, a sleep past it waits (it never comes) until cancelled")
    func sleepPastTheEnd() async throws {
        let clock = try ManualClock()
        try clock.advance(by: .nanoseconds(Int64.max))  // to the end of the range
        #expect(clock.now == ManualClock.Instant(offset: .nanoseconds(Int64.max)))
        try await clock.sleep(until: clock.now)  // reached: at once
        let loop = clock.loop
        let sleeps: [@Sendable () async throws -> Void] = [
            { try await clock.sleep(for: .seconds(1)) },
            { try await loop.sleep(until: loop.now(.monotonic) + .seconds(1)) },
        ]
        for sleep in sleeps {
            let ended = Locked(false)
            let task = Task {
                defer { ended.withLock { $0 = true } }
                try await sleep()
            }
            // Until its timer is in the loop, or (wrongly) it has ended.
            while loop.statistics.pending == 0 && !ended.value { await Task.yield() }
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }
            #expect(loop.statistics.pending == 0)
        }
    }
}
