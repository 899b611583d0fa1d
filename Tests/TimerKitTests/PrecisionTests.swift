import Testing
import TimerKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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

    @Test("a precision describes itself as its doc shows")
    func precisionDescription() {
        #expect(LoopPrecision(margin: .microseconds(200)).description == "margin 200 µs, no real-time priority")
        #expect(LoopPrecision(margin: .nanoseconds(1500), realtimePriority: 10).description
            == "margin 1500 ns, SCHED_FIFO priority 10")
        #expect(LoopPrecision(margin: .nanoseconds(3) / 2).description
            == "margin \(Duration.nanoseconds(3) / 2), no real-time priority")
    }

    @Test("bad precision settings are refused, and the settings in force stay")
    func badSettings() throws {
        let loop = try TimerLoop()
        #expect(loop.precision == nil)
        let kept = LoopPrecision(margin: .microseconds(350))
        try loop.setPrecision(kept)
        let bad = [
            LoopPrecision(margin: .zero),
            LoopPrecision(margin: .nanoseconds(-1)),
            LoopPrecision(margin: .nanoseconds(1) / 2),
            LoopPrecision(margin: LoopPrecision.maximumMargin + .nanoseconds(1)),
            LoopPrecision(margin: LoopPrecision.maximumMargin + .nanoseconds(1) / 2),
            LoopPrecision(margin: .seconds(Int64.max)),
            LoopPrecision(realtimePriority: 0),
            LoopPrecision(realtimePriority: -5),
            LoopPrecision(realtimePriority: 100),
        ]
        for precision in bad {
            #expect(throws: TimerError.invalidPrecision(precision)) { try loop.setPrecision(precision) }
            #expect(loop.precision == kept)
        }
        // A part of a nanosecond counts as a whole one: never less than asked for.
        try loop.setPrecision(LoopPrecision(margin: .nanoseconds(3) / 2, realtimePriority: nil))
        #expect(loop.precision?.margin == .nanoseconds(2))
        try loop.setPrecision(LoopPrecision(margin: LoopPrecision.maximumMargin))
        #expect(loop.precision?.margin == LoopPrecision.maximumMargin)
        try loop.setPrecision(LoopPrecision())
        #expect(loop.precision == LoopPrecision())
        #expect(loop.precision?.margin == LoopPrecision.defaultMargin)
        try loop.setPrecision(nil)
        #expect(loop.precision == nil)
        #expect(String(describing: kept) == "margin 350 µs, no real-time priority")
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
        let count = 30
        let early = Locked(0)
        let fired = Locked(0)
        // Deadlines: the first fire date, then every period; skipped ones are
        // counted in `missed`. Set before the loop runs.
        let next = Locked(MonotonicClock.Instant(offset: .zero))
        let repeating = try loop.schedulePrecise(after: period, repeating: period) { timer, missed in
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
        next.withLock { $0 = repeating.fireDate! }
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

    @Test("a loop running on its own thread takes a real-time priority at its next pass, and gives it back")
    func priorityOnRunningLoop() throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        #expect(try policyOfLoopThread(loop) == (SCHED_OTHER, 0))
        let permitted = mayRunFIFO(priority: 10)
        do {
            try loop.setPrecision(LoopPrecision(realtimePriority: 10))
            #expect(permitted)
            #expect(try policyOfLoopThread(loop) == (SCHED_FIFO, 10))
            try loop.setPrecision(LoopPrecision())
            #expect(try policyOfLoopThread(loop) == (SCHED_OTHER, 0))
        } catch TimerError.realtimePriorityNotPermitted {
            // Refused, and said so: the kernel refuses this process too.
            #expect(!permitted)
            #expect(loop.precision == nil)
        }
        #expect(loop.failure == nil)
    }

    @Test("a real-time loop thread that preempts a thread holding a timer's lock lets that thread finish")
    func realtimeLoopLetsPreemptedHolderRun() throws {
        // The loop's thread, at SCHED_FIFO, and a thread that reads a timer's
        // state without pause share one processor. Each fire wakes the loop's
        // thread, which preempts the reader, now and then while the reader
        // holds the timer's lock, which the fire takes too.
        guard mayRunFIFO(priority: 10) else {
            Issue.record(
                "this test needs a SCHED_FIFO thread: run it as root, or with CAP_SYS_NICE or an RLIMIT_RTPRIO of at least 10"
            )
            return
        }
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let loopProcessor = Locked<Int??>(nil)
        try loop.schedule(after: .zero) { _, _ in
            loopProcessor.withLock { $0 = pinToFirstProcessor() }
        }
        for _ in 0..<5_000 where loopProcessor.value == nil { usleep(1_000) }
        let processor = try #require(loopProcessor.value ?? nil, "the loop's thread could not be pinned")
        try loop.setPrecision(LoopPrecision(realtimePriority: 10))

        let fires = Locked(0)
        let timer = try loop.schedule(after: .milliseconds(1), repeating: .milliseconds(1)) { _, _ in
            fires.withLock { $0 += 1 }
        }
        defer { timer.invalidate() }
        let readerPinned = Locked(false)
        runThreads(1) { _ in
            readerPinned.withLock { $0 = pinToProcessor(processor) }
            let end = ContinuousClock.now + .milliseconds(1_500)
            while ContinuousClock.now < end {
                for _ in 0..<1_000 { _ = timer.isValid }
            }
        }
        #expect(readerPinned.value)
        // About 1,500 fires came due. A loop thread that only spun and
        // yielded while the lock was held kept the reader off the processor
        // until the kernel's real-time throttling let it run, about once a
        // second: a handful of fires (2 to 12 in 3 s). 50, a thirtieth of
        // the fires due, leaves room for a busy machine.
        #expect(fires.value >= 50)
        #expect(loop.failure == nil)
    }
}

/// The policy and priority of the thread running `loop`, read by an action.
private func policyOfLoopThread(_ loop: TimerLoop) throws -> (Int32, Int32) {
    let seen = Locked<(Int32, Int32)?>(nil)
    try loop.schedule(after: .zero) { _, _ in
        var policy: Int32 = -1
        var param = sched_param()
        pthread_getschedparam(pthread_self(), &policy, &param)
        seen.withLock { $0 = (policy, param.sched_priority) }
    }
    for _ in 0..<5_000 {
        if let value = seen.value { return value }
        usleep(1_000)
    }
    Issue.record("the loop's thread did not run the action")
    return (-1, -1)
}

/// Whether this process may start a thread at `SCHED_FIFO` `priority`,
/// asked of the kernel directly.
private func mayRunFIFO(priority: Int32) -> Bool {
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    var param = sched_param(sched_priority: priority)
    pthread_attr_setinheritsched(&attributes, Int32(PTHREAD_EXPLICIT_SCHED))
    pthread_attr_setschedpolicy(&attributes, SCHED_FIFO)
    pthread_attr_setschedparam(&attributes, &param)
    var thread = pthread_t()
    guard pthread_create(&thread, &attributes, { _ in nil }, nil) == 0 else { return false }
    pthread_join(thread, nil)
    return true
}

/// Pins the calling thread to `processor`; false if the kernel refuses.
/// (`sched_setaffinity` is a GNU extension, which Swift's Glibc module does
/// not declare: it is looked up in the C library.)
private func pinToProcessor(_ processor: Int) -> Bool {
    typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
    guard processor >= 0, processor < 1024, let symbol = dlsym(nil, "sched_setaffinity") else {
        return false
    }
    var set = [UInt64](repeating: 0, count: 1024 / 64)  // a cpu_set_t
    set[processor / 64] = 1 << UInt64(processor % 64)
    return unsafeBitCast(symbol, to: SetAffinity.self)(0, set.count * 8, set) == 0
}

/// The first processor that the calling thread may be pinned to, now
/// pinned to it; nil if none may.
private func pinToFirstProcessor() -> Int? {
    (0..<1024).first(where: pinToProcessor)
}
