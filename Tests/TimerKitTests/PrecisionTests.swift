import Testing
import TimerKit

// Precise timers and a loop's precision: exact on a manual loop, never early
// and fired on a real one, the spin's cost in the statistics, and every bad
// setting refused without changing what is in force. (The refusal of a
// SCHED_FIFO priority by the kernel, and the thread's timer slack, are
// tested in C, test_precision, in child processes that drop CAP_SYS_NICE.)

@Suite("Precise timers")
struct PrecisionTests {
    @Test("on a manual loop a precise timer fires exactly at its deadlines, with no spin")
    func manualExact() throws {
        let loop = try TimerLoop.manual()
        try loop.setPrecision(LoopPrecision(margin: .milliseconds(50)))
        let fires = Locked<[String]>([])
        let precise = try loop.schedulePrecise(after: .milliseconds(10), repeating: .milliseconds(10)) {
            _, missed in fires.withLock { $0.append("p\(missed)@\(loop.time)") }
        }
        // Due at 25 ms, may wait up to 45 ms: shares the 30 ms wake-up.
        let lenient = try loop.schedule(after: .milliseconds(25), tolerance: .milliseconds(20)) {
            _, _ in fires.withLock { $0.append("l@\(loop.time)") }
        }
        #expect(precise.isPrecise)
        #expect(!lenient.isPrecise)
        #expect(try loop.advance(by: .milliseconds(40)) == 5)
        #expect(fires.value == [
            "p0@0.01 seconds", "p0@0.02 seconds", "l@0.03 seconds", "p0@0.03 seconds",
            "p0@0.04 seconds",
        ])
        #expect(loop.statistics.wakeups == 4)
        #expect(loop.statistics.spins == 0)
        #expect(loop.statistics.spinTime == .zero)
        precise.invalidate()
    }

    @Test("a precise timer has no tolerance; made ordinary again, it has the one it was given")
    func toleranceComesBack() throws {
        let loop = try TimerLoop.manual()
        let timer = try LoopTimer(after: .milliseconds(10), tolerance: .milliseconds(4)) { _, _ in }
        try timer.setPrecise(true)
        try loop.add(timer)
        #expect(timer.isPrecise)
        #expect(timer.tolerance == .milliseconds(4))
        // Fires at 10 ms, not up to 14 ms: no tolerance while precise.
        #expect(try loop.advance(by: .milliseconds(10)) == 1)
        #expect(!timer.isValid)

        let again = try LoopTimer(after: .milliseconds(10), tolerance: .milliseconds(4)) { _, _ in }
        try again.setPrecise(true)
        try loop.add(again)
        try again.setPrecise(false)
        #expect(!again.isPrecise)
        #expect(again.fireDate?.offset == .milliseconds(20))
        // Ordinary again: the loop may wait out the 4 ms tolerance.
        #expect(try loop.advance(by: .milliseconds(13)) == 0)
        #expect(try loop.advance(by: .milliseconds(1)) == 1)
        #expect(loop.time == .milliseconds(24))
        #expect(throws: TimerError.invalidated) { try again.setPrecise(true) }
    }

    @Test("bad precision settings are refused, and the settings in force stay")
    func badSettings() throws {
        let loop = try TimerLoop()
        #expect(loop.precision == LoopPrecision())
        #expect(loop.precision.margin == LoopPrecision.defaultMargin)
        let kept = LoopPrecision(margin: .microseconds(350))
        try loop.setPrecision(kept)
        let bad = [
            LoopPrecision(margin: .zero),
            LoopPrecision(margin: .nanoseconds(-1)),
            LoopPrecision(margin: .nanoseconds(1) / 2),
            LoopPrecision(margin: LoopPrecision.maximumMargin + .nanoseconds(1)),
            LoopPrecision(margin: .seconds(Int64.max)),
            LoopPrecision(realtimePriority: 0),
            LoopPrecision(realtimePriority: -5),
            LoopPrecision(realtimePriority: 100),
        ]
        for precision in bad {
            #expect(throws: TimerError.invalidPrecision(precision)) { try loop.setPrecision(precision) }
            #expect(loop.precision == kept)
        }
        try loop.setPrecision(LoopPrecision(margin: LoopPrecision.maximumMargin))
        #expect(loop.precision.margin == LoopPrecision.maximumMargin)
        try loop.setPrecision(nil)
        #expect(loop.precision == LoopPrecision())
        #expect(String(describing: kept) == "margin 0.00035 seconds, no real-time priority")
    }

    @Test("EPERM from setting a precision, or from a run, is realtimePriorityNotPermitted")
    func permissionMapsToTypedError() {
        let refused = SystemError(errno: .notPermitted, function: "tk_loop_set_precision")
        #expect(TimerError(refused) == .realtimePriorityNotPermitted)
        let lost = SystemError(errno: .notPermitted, function: "tk_loop_run")
        #expect(TimerError(lost) == .realtimePriorityNotPermitted)
        let other = SystemError(errno: .notPermitted, function: "tk_loop_watch_fd")
        #expect(TimerError(other) == .system(other))
    }

    @Test("on a real loop, precise timers fire, never early, and the spin's cost is counted")
    func realNeverEarly() throws {
        let loop = try TimerLoop()
        try loop.setPrecision(LoopPrecision(margin: .milliseconds(3)))
        let period = Duration.milliseconds(4)
        let start = MonotonicClock.now
        let count = 30
        let early = Locked(0)
        let fired = Locked(0)
        // Deadlines: start + k * period, for k = 1, 2, ...; skipped ones are
        // counted in `missed`.
        let next = Locked(start + period)
        try loop.schedulePrecise(after: period, repeating: period) { timer, missed in
            let now = MonotonicClock.now
            let due = next.withLock { deadline -> MonotonicClock.Instant in
                deadline = deadline + period * Int(missed)
                let due = deadline
                deadline = deadline + period
                return due
            }
            if now < due { early.withLock { $0 += 1 } }
            if fired.withLock({ $0 += 1; return $0 }) == count {
                timer.invalidate()
                loop.stop()
            }
        }
        // One-shots on the boot clock, also precise.
        let boot = Locked(0)
        for offset in [5, 17, 33, 61] {
            let deadline = BootClock.now + .milliseconds(offset)
            let timer = try LoopTimer(fireAt: deadline) { _, _ in
                if BootClock.now < deadline { early.withLock { $0 += 1 } }
                boot.withLock { $0 += 1 }
            }
            try timer.setPrecise(true)
            try loop.add(timer)
        }
        try loop.run()
        #expect(fired.value == count)
        #expect(boot.value == 4) // 61 ms < 30 * 4 ms
        #expect(early.value == 0)
        let statistics = loop.statistics
        // Each of 34 wake-ups would have to be over 3 ms late for no spin at all.
        #expect(statistics.spins >= 1)
        #expect(statistics.spins <= statistics.fired)
        #expect(statistics.spinTime > .zero)
    }
}
