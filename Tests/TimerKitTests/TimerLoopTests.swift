import Testing
import TimerKit

// TimerLoop itself: coalesced wake-ups, wall-clock steps, manual clocks,
// running and stopping real loops, the current thread's loop.

@Suite("TimerLoop")
struct TimerLoopTests {
    @Test("tolerance lets nearby timers share one wake-up (statistics.wakeups)")
    func coalescing() throws {
        for (tolerance, wakeups) in [(Duration.seconds(1), 1), (.zero, 10)] {
            let loop = try TimerLoop.manual()
            let times = Locked<[Duration]>([])
            for n in 0..<10 {
                try loop.schedule(after: .milliseconds(1000 + 100 * n), tolerance: tolerance) { _, _ in
                    times.withLock { $0.append(loop.time) }
                }
            }
            #expect(try loop.advance(by: .seconds(3)) == 10)
            #expect(loop.statistics.wakeups == UInt64(wakeups), "tolerance \(tolerance)")
            #expect(loop.statistics.fired == 10)
            if tolerance == .zero {
                #expect(times.value == (0..<10).map { .milliseconds(1000 + 100 * $0) })
            } else {
                // The earliest (fire date + tolerance) is 2 s: all ten are due there.
                #expect(times.value == Array(repeating: .seconds(2), count: 10))
            }
        }
    }

    @Test("a wall-clock-change handler replaced or removed is let go of, and only the one set is called")
    func wallClockHandlerReplaced() throws {
        let loop = try TimerLoop.manual()
        final class Token: Sendable {}
        final class Watch: @unchecked Sendable {
            weak var token: Token?
        }
        let log = Locked<[String]>([])
        func step() throws {
            try loop.setManualTime(to: loop.now(.wall) + .seconds(60))
            try loop.advance(by: .zero)
        }
        func handler(_ name: String, holding token: Token, _ watch: Watch) -> @Sendable () -> Void {
            watch.token = token
            return { _ = token; log.withLock { $0.append(name) } }
        }
        let first = Watch()
        try loop.onWallClockChange(handler("first", holding: Token(), first))
        try step()
        #expect(log.value == ["first"])
        let second = Watch()
        try loop.onWallClockChange(handler("second", holding: Token(), second))
        #expect(first.token == nil, "the replaced handler was kept")
        try step()
        #expect(log.value == ["first", "second"])
        loop.removeWallClockChangeHandler()
        #expect(second.token == nil, "the removed handler was kept")
        try step()
        #expect(log.value == ["first", "second"])
        // Set again after a removal: called again.
        try loop.onWallClockChange { log.withLock { $0.append("third") } }
        try step()
        #expect(log.value == ["first", "second", "third"])
        #expect(loop.statistics.clockChanges == 4)
    }

    @Test("a wall-clock step on a manual loop calls onWallClockChange before wall timers fire")
    func wallClockStep() throws {
        let loop = try TimerLoop.manual()
        let log = Locked<[String]>([])
        try loop.onWallClockChange { log.withLock { $0.append("step") } }
        let wallTimer = try LoopTimer(fireAt: WallClock.Instant(offset: .seconds(500))) { _, _ in
            log.withLock { $0.append("wall timer at wall \(loop.now(.wall).offset)") }
        }
        try loop.add(wallTimer)
        try loop.schedule(after: .seconds(500)) { _, _ in log.withLock { $0.append("monotonic") } }

        try loop.setManualTime(to: WallClock.Instant(offset: .seconds(1000)))
        #expect(log.value.isEmpty, "the step is reported by the next advance")
        #expect(try loop.advance(by: .zero) == 1)
        #expect(log.value == ["step", "wall timer at wall 1000.0 seconds"])
        #expect(loop.statistics.clockChanges == 1)
        #expect(loop.time == .zero)

        // Setting the same time is no step; stepping back is.
        try loop.setManualTime(to: WallClock.Instant(offset: .seconds(1000)))
        try loop.advance(by: .zero)
        #expect(loop.statistics.clockChanges == 1)
        // Stepping back: a wall timer is re-evaluated against the new time.
        let later = try LoopTimer(fireAt: WallClock.Instant(offset: .seconds(1500))) { _, _ in
            log.withLock { $0.append("later at wall \(loop.now(.wall).offset)") }
        }
        try loop.add(later)
        try loop.setManualTime(to: WallClock.Instant(offset: .seconds(100)))
        #expect(try loop.advance(by: .zero) == 0)
        #expect(loop.statistics.clockChanges == 2)
        #expect(later.fireDate?.offset == .seconds(1500))
        try loop.advance(by: .seconds(1400))
        #expect(log.value == [
            "step", "wall timer at wall 1000.0 seconds", "step", "monotonic",
            "later at wall 1500.0 seconds",
        ])

        // Without a handler a step is still counted, and nothing is called.
        loop.removeWallClockChangeHandler()
        try loop.setManualTime(to: WallClock.Instant(offset: .seconds(7)))
        try loop.advance(by: .zero)
        #expect(loop.statistics.clockChanges == 3)
        #expect(log.value.filter { $0 == "step" }.count == 2)
    }

    @Test("a manual loop's clocks move together; moving the boot clock alone models a suspend")
    func manualClocks() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(100))
        func readings() -> [Duration] {
            [loop.now(.monotonic).offset, loop.now(.boot).offset, loop.now(.wall).offset]
        }
        #expect(readings() == Array(repeating: .seconds(100), count: 3))
        try loop.advance(by: .seconds(5))
        #expect(readings() == Array(repeating: .seconds(105), count: 3))

        let fired = Locked<[ClockID]>([])
        @Sendable func record<Clock: TimerClock>(_: LoopTimer<Clock>, _: UInt64) {
            fired.withLock { $0.append(Clock.clockID) }
        }
        try loop.schedule(after: .seconds(60), clock: .monotonic, record)
        try loop.schedule(after: .seconds(60), clock: .boot, record)
        try loop.schedule(after: .seconds(60), clock: .wall, record)
        try loop.setManualTime(to: BootClock.Instant(offset: .seconds(1000)))  // the system slept
        #expect(try loop.advance(by: .zero) == 1)
        #expect(fired.value == [.boot])
        #expect(loop.time == .seconds(105))
        try loop.advance(by: .seconds(60))
        #expect(Set(fired.value) == Set(ClockID.allCases))
        #expect(throws: TimerError.system(SystemError(errno: .invalidArgument, function: "tk_loop_set_manual_time"))) {
            try loop.setManualTime(to: at(.seconds(1)))
        }
    }

    @Test("a manual run ends with a pass at its deadline, as a real run does; an advance does not")
    func manualRunDeadlinePass() throws {
        for byRun in [false, true] {
            let loop = try TimerLoop.manual(startingAt: .zero)
            let firedAt = Locked<[Duration]>([])
            try loop.schedule(after: .milliseconds(10), tolerance: .milliseconds(100)) { _, _ in
                firedAt.withLock { $0.append(loop.time) }
            }
            let dragging = try loop.schedule(after: .milliseconds(10), in: .tracking) { _, _ in }
            if byRun {
                #expect(try loop.run(for: .milliseconds(30)) == .timedOut)
            } else {
                try loop.advance(by: .milliseconds(30))
            }
            #expect(loop.time == .milliseconds(30))
            #expect(firedAt.value == (byRun ? [.milliseconds(30)] : []))
            #expect(dragging.isWaitingForMode == byRun)
            // An advance begins with a pass: what the last one left due fires now.
            try loop.advance(by: .milliseconds(80))
            #expect(firedAt.value == [.milliseconds(30)])
        }
    }

    @Test("a manual run to the end of the clock's range returns, at the nanosecond before it")
    func manualRunToTheEndOfTime() throws {
        let last = Duration.nanoseconds(Int64.max)
        let loop = try TimerLoop.manual(startingAt: last - .seconds(1))
        let fired = Locked(0)
        try loop.schedule(after: .milliseconds(500)) { _, _ in fired.withLock { $0 += 1 } }
        // Past the range: the deadline saturates at Int64.max, which would
        // read as "no deadline" in the C core.
        #expect(try loop.run(for: .seconds(2)) == .timedOut)
        #expect(loop.time == last - .nanoseconds(1))
        #expect(fired.value == 1)
        #expect(try loop.run(until: MonotonicClock.Instant(offset: last)) == .timedOut)
        #expect(loop.time == last - .nanoseconds(1))
        let clock = try ManualClock()
        #expect(try clock.run(until: ManualClock.Instant(offset: .seconds(1_000_000_000_000))) == .timedOut)
        #expect(clock.now.offset == last - .nanoseconds(1))
    }

    @Test("a real loop runs until stopped, from a timer or from another thread")
    func runAndStop() throws {
        let loop = try TimerLoop()
        let fired = Locked(0)
        try loop.schedule(after: .milliseconds(2)) { _, _ in
            fired.withLock { $0 += 1 }
            loop.stop()
        }
        #expect(try loop.run() == .stopped)
        #expect(fired.value == 1)

        // stop() before run: the next run returns at once.
        loop.stop()
        #expect(try loop.run() == .stopped)

        #expect(try loop.runOnce(waiting: false) == .passed)
        #expect(try loop.run(until: MonotonicClock().now + .milliseconds(5)) == .timedOut)

        let stopper = try TimerLoop.startThread()
        defer { stopper.stop() }
        try stopper.schedule(after: .milliseconds(5)) { _, _ in loop.stop() }
        #expect(try loop.run() == .stopped)
    }

    @Test("a stop is the innermost run's as it is asked: a run an action starts after it does not take it")
    func stopThenNestedRun() throws {
        let loop = try TimerLoop.manual()
        let nested = Locked<[TimerLoop.RunResult]>([])
        let log = Locked<[String]>([])
        try loop.schedule(after: .milliseconds(10)) { _, _ in
            log.withLock { $0.append("closes@\(loop.time)") }
            loop.stop()
            // Pumping the loop once more before the action returns.
            let pumped = try? loop.runOnce(mode: .tracking, waiting: false)
            let ran = try? loop.run(mode: .tracking, for: .milliseconds(50))
            nested.withLock { $0 += [pumped, ran].compactMap { $0 } }
        }
        try loop.schedule(after: .milliseconds(30), in: .common) { _, _ in
            log.withLock { $0.append("common@\(loop.time)") }
        }
        try loop.schedule(after: .milliseconds(40)) { _, _ in
            log.withLock { $0.append("default@\(loop.time)") }
        }
        #expect(try loop.run(for: .seconds(1)) == .stopped)
        #expect(nested.value == [.passed, .timedOut])
        #expect(loop.time == .milliseconds(60))
        #expect(log.value == ["closes@\(Duration.milliseconds(10))", "common@\(Duration.milliseconds(30))"])
        // The default timer that came due in the nested run waits for the next.
        #expect(try loop.run(for: .milliseconds(10)) == .timedOut)
        #expect(log.value.last == "default@\(Duration.milliseconds(60))")
    }

    @Test("a loop on its own thread runs timers scheduled from other threads")
    func startThread() throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let fired = Locked(0)
        for _ in 0..<10 {
            try loop.schedule(after: .milliseconds(1)) { _, _ in fired.withLock { $0 += 1 } }
        }
        #expect(waitUntil { fired.value == 10 })
        #expect(loop.statistics.pending == 0)
        #expect(!loop.isManual)
    }

    @Test("run from a timer's action runs the loop nested, in another mode")
    func nestedRun() throws {
        let loop = try TimerLoop()
        let log = Locked<[String]>([])
        let ticker = try loop.schedule(
            after: .milliseconds(1), repeating: .milliseconds(2), in: .common
        ) { _, _ in log.withLock { $0.append("common") } }
        let plain = try loop.schedule(after: .milliseconds(1), repeating: .milliseconds(2)) {
            _, _ in log.withLock { $0.append("default") }
        }
        try loop.schedule(after: .zero) { _, _ in
            log.withLock { $0.append("drag starts") }
            let result = try? loop.run(mode: .tracking, until: MonotonicClock().now + .milliseconds(50))
            log.withLock { $0.append("drag ends, timed out: \(result == .timedOut)") }
            loop.stop()
        }
        #expect(try loop.run() == .stopped)
        ticker.invalidate()
        plain.invalidate()
        let entries = log.value
        let start = try #require(entries.firstIndex(of: "drag starts"))
        let end = try #require(entries.firstIndex { $0.hasPrefix("drag ends") })
        #expect(entries[end] == "drag ends, timed out: true")
        let during = entries[(start + 1)..<end]
        #expect(during.contains("common"))
        #expect(!during.contains("default"))
    }

    @Test("current() is one loop per thread")
    func currentLoop() throws {
        let here = try TimerLoop.current()
        #expect(try TimerLoop.current() === here)
        let other = Locked<ObjectIdentifier?>(nil)
        let thread = try TimerLoop.startThread()
        try thread.schedule(after: .zero) { _, _ in
            other.withLock { $0 = (try? TimerLoop.current()).map(ObjectIdentifier.init) }
        }
        #expect(waitUntil { other.value != nil })
        thread.stop()
        #expect(other.value == ObjectIdentifier(thread))
        #expect(other.value != ObjectIdentifier(here))
    }
}
