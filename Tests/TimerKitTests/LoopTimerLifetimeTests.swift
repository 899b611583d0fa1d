import CTimerCore
import Glibc
import Testing

@testable import TimerKit

// LoopTimers keep the C core's record of their timer inside themselves
// (tk_loop_schedule_record), and invalidating one takes the loop's reference
// back (tk_loop_cancel_record) unless its action runs. These tests race every
// way a timer ends against the others on running loops, and check that every
// timer is freed exactly once and nothing stays pending: the memory the loop
// writes is the timer object's own, so a reference released once too often
// or too early is a use after free (CI runs them under ThreadSanitizer).

private let deinits = Locked(0)
private let created = Locked(0)

/// Counts its deinit: captured by each timer's action, so that its deinit
/// shows the timer was freed.
private final class Token: @unchecked Sendable {
    init() { created.withLock { $0 += 1 } }
    deinit { deinits.withLock { $0 += 1 } }
}

/// The tokens made and freed so far.
private func tokenCounts() -> (made: Int, freed: Int) { (created.value, deinits.value) }

/// Expects every token made since `before` to have been freed, waiting up to
/// 10 s for a loop's thread to let go of the last timers.
private func expectAllFreed(
    since before: (made: Int, freed: Int), sourceLocation: SourceLocation = #_sourceLocation
) {
    let freed = waitUntil(.seconds(10)) {
        deinits.value - before.freed == created.value - before.made
    }
    #expect(
        freed, "freed \(deinits.value - before.freed) of \(created.value - before.made)",
        sourceLocation: sourceLocation)
}

/// Runs `body(loop, thread)` on `threads` threads against one loop running on
/// its own thread, then `finish(loop)`, and expects the loop to end with no
/// timer pending and every token made meanwhile to be freed.
private func raceOnRunningLoop(
    threads: Int, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable (TimerLoop, Int) -> Void,
    finish: (TimerLoop) -> Void = { _ in }
) throws {
    let loop = try TimerLoop.startThread()
    defer { loop.stop() }
    let before = tokenCounts()
    runThreads(threads) { body(loop, $0) }
    finish(loop)
    #expect(waitUntil(.seconds(10)) { loop.statistics.pending == 0 }, sourceLocation: sourceLocation)
    expectAllFreed(since: before, sourceLocation: sourceLocation)
}

@Suite("LoopTimer lifetimes across threads", .serialized)
struct LoopTimerLifetimeTests {
    @Test("many threads schedule and invalidate one-shot and repeating timers on a running loop")
    func scheduleInvalidateStorm() throws {
        let fires = Locked(0)
        // One-shots left alone fire; every repeating timer is invalidated.
        try raceOnRunningLoop(threads: 6) { loop, thread in
            var rng = SeededGenerator(seed: UInt64(thread) &* 7919 &+ 1)
            var live: [AnyLoopTimer] = []
            var all: [AnyLoopTimer] = []
            for i in 0..<3000 {
                let token = Token()
                let repeating = rng.chance(40)
                let delay = Duration.nanoseconds(rng.within(0...200_000))
                let selfInvalidate = rng.chance(30)
                let timer = try! loop.schedule(
                    after: delay, repeating: repeating ? .nanoseconds(rng.within(1...50_000)) : nil
                ) { timer, _ in
                    _ = token
                    fires.withLock { $0 += 1 }
                    if selfInvalidate { timer.invalidate() }
                }
                switch rng.below(6) {
                case 0: timer.invalidate()
                case 1: live.append(timer)
                case 2: timer.fire()
                case 3: try? timer.setFireDate(loop.now(.monotonic) + .nanoseconds(rng.within(0...100_000)))
                case 4: try? timer.setTolerance(.nanoseconds(rng.within(0...10_000)))
                default: if repeating { try? timer.setInterval(.nanoseconds(rng.within(1...20_000))) }
                }
                if !live.isEmpty && rng.chance(50) {
                    let k = rng.below(live.count)
                    live[k].invalidate()
                    live.remove(at: k)
                }
                if i % 500 == 0 { sleepThread(.microseconds(200)) }
                if repeating { all.append(timer) }
            }
            for t in live { t.invalidate() }
            for t in all { t.invalidate() }
        }
        #expect(fires.value > 0)
    }

    @Test("repeating timers with a tiny interval invalidated from another thread as they fire")
    func invalidateWhileFiring() throws {
        try raceOnRunningLoop(threads: 4) { loop, _ in
            for _ in 0..<4000 {
                let token = Token()
                let started = Locked(false)
                let timer = try! loop.schedule(after: .zero, repeating: .nanoseconds(1)) { _, _ in
                    _ = token
                    started.withLock { $0 = true }
                }
                // Spin briefly so that the cancel lands while the action runs, sometimes.
                var spins = 0
                while !started.value && spins < 2000 { spins += 1 }
                timer.invalidate()
            }
        }
    }

    @Test("one-shots fire on the loop thread as other threads invalidate them, and are freed")
    func oneShotRace() throws {
        try raceOnRunningLoop(threads: 4) { loop, thread in
            var rng = SeededGenerator(seed: UInt64(thread) + 99)
            for _ in 0..<5000 {
                let token = Token()
                let selfInv = rng.chance(30)
                let timer = try! loop.schedule(after: .nanoseconds(rng.within(0...20_000))) { t, _ in
                    _ = token
                    if selfInv { t.invalidate() }
                }
                sleepThread(.nanoseconds(rng.within(0...20_000)))
                timer.invalidate()
                if rng.chance(20) { timer.fire() }
            }
        }
    }

    @Test("fire() by hand from threads while the loop fires and others invalidate")
    func fireByHandRace() throws {
        let shared = Locked<[AnyLoopTimer]>([])
        try raceOnRunningLoop(threads: 6) { loop, thread in
            var rng = SeededGenerator(seed: UInt64(thread) + 1234)
            for _ in 0..<4000 {
                switch thread % 3 {
                case 0:
                    let token = Token()
                    let t = try! loop.schedule(
                        after: .nanoseconds(rng.within(0...50_000)),
                        repeating: rng.chance(50) ? .nanoseconds(rng.within(1...30_000)) : nil
                    ) { t, _ in
                        _ = token
                        if Int.random(in: 0..<10) == 0 { t.invalidate() }
                    }
                    shared.withLock { $0.append(t) }
                case 1:
                    let t = shared.withLock { $0.randomElement() }
                    t?.fire()
                    if let t { try? loop.add(t, forMode: .common) }
                    if let t { try? t.setTolerance(.nanoseconds(rng.within(0...1000))) }
                default:
                    let t = shared.withLock { list -> AnyLoopTimer? in
                        list.isEmpty ? nil : list.remove(at: Int.random(in: 0..<list.count))
                    }
                    t?.invalidate()
                }
            }
        } finish: { _ in
            for t in shared.withLock({ $0 }) { t.invalidate() }
            shared.withLock { $0.removeAll() }
        }
    }

    @Test("loop deinit with invalidated-while-running and pending timers")
    func loopDeinit() throws {
        let before = tokenCounts()
        for _ in 0..<200 {
            let loop = try TimerLoop.manual()
            var keep: [AnyLoopTimer] = []
            for i in 0..<20 {
                let token = Token()
                let t = try loop.schedule(after: .milliseconds(Int64(i)), repeating: .milliseconds(3)) { t, _ in
                    _ = token
                    t.invalidate()
                }
                keep.append(t)
            }
            try loop.advance(by: .milliseconds(10))
            for t in keep { t.invalidate() }
        }
        expectAllFreed(since: before)
    }

    @Test("a loop let go of stays while a timer is pending on it, and goes once it is invalidated or fired")
    func pendingWorkKeepsLoop() throws {
        weak var weakLoop: TimerLoop?
        var timer: LoopTimer<MonotonicClock>?
        do {
            let loop = try TimerLoop()
            weakLoop = loop
            timer = try loop.schedule(after: .seconds(3600)) { _, _ in }
        }
        #expect(weakLoop != nil, "the pending timer keeps its loop")
        timer?.invalidate()
        #expect(weakLoop == nil, "invalidated, it lets go of the loop, which is freed")
        let fired = Locked(false)
        do {
            let loop = try TimerLoop.manual()
            weakLoop = loop
            try loop.schedule(after: .seconds(1)) { _, _ in fired.withLock { $0 = true } }
        }
        #expect(weakLoop != nil)
        try weakLoop?.advance(by: .seconds(1))
        #expect(fired.value)
        #expect(weakLoop == nil, "fired, the one-shot lets go of the loop")
        timer = nil
    }

    @Test("a loop let go of stays while any of its timers is pending, and goes with the last")
    func lastTimerLetsGoOfLoop() throws {
        weak var weakLoop: TimerLoop?
        var timers: [LoopTimer<MonotonicClock>] = []
        do {
            let loop = try TimerLoop()
            weakLoop = loop
            for second in 1...3 {
                timers.append(try loop.schedule(after: .seconds(3600 * second)) { _, _ in })
            }
            // The loop's hold is taken once, by the first: a timer invalidated
            // and another scheduled leave it as it is.
            timers[0].invalidate()
            timers[0] = try loop.schedule(after: .seconds(3600)) { _, _ in }
        }
        for timer in timers.dropLast() {
            timer.invalidate()
            #expect(weakLoop != nil, "a timer is still pending")
        }
        // Invalidated again, a timer changes nothing.
        timers[0].invalidate()
        #expect(weakLoop != nil)
        timers.last?.invalidate()
        #expect(weakLoop == nil, "the last timer let go of the loop")
        timers.last?.invalidate()

        // Again on a loop whose hold ended once: it holds itself anew.
        let loop = try TimerLoop.manual()
        weakLoop = loop
        try loop.schedule(after: .seconds(1)) { _, _ in }.invalidate()
        let again = try loop.schedule(after: .seconds(1)) { _, _ in }
        _ = consume loop
        #expect(weakLoop != nil)
        again.invalidate()
        #expect(weakLoop == nil)
    }

    @Test("scheduled timers hold their loop once between them, not once each")
    func oneHoldForAllTimers() throws {
        let loop = try TimerLoop.manual()
        let alone = _getRetainCount(loop)
        var timers: [LoopTimer<MonotonicClock>] = []
        for second in 1...50 {
            timers.append(try loop.schedule(after: .seconds(Int64(second))) { _, _ in })
        }
        #expect(_getRetainCount(loop) == alone + 1, "one reference for all 50 timers")
        for timer in timers.dropLast() { timer.invalidate() }
        try loop.advance(by: .seconds(49))
        #expect(_getRetainCount(loop) == alone + 1)
        timers.last?.invalidate()
        #expect(_getRetainCount(loop) == alone)
    }

    @Test("the loop's hold ends and begins again on several threads at once, and goes with the last timer")
    func holdAcrossThreads() throws {
        let before = tokenCounts()
        for round in 0..<20 {
            let watch: WeakReference<TimerLoop>
            do {
                // A running loop fires one-shots due at once (their ends
                // end the hold on its thread) while three threads schedule
                // and invalidate (theirs end it on theirs, and begin it).
                let loop = try TimerLoop.startThread()
                watch = WeakReference(loop)
                runThreads(3) { thread in
                    for i in 0..<400 {
                        let token = Token()
                        let timer = try! loop.schedule(
                            after: .nanoseconds(Int64((i * 7 + thread) % 3) * 20_000)
                        ) { _, _ in _ = token }
                        if (i + thread + round) % 2 == 0 { timer.invalidate() }
                    }
                }
                #expect(waitUntil { loop.statistics.pending == 0 }, "round \(round)")
                loop.stop()
            }
            // The loop's thread lets go of it once its run has ended.
            #expect(waitUntil { watch.object == nil }, "round \(round): the loop was not freed")
        }
        expectAllFreed(since: before)
    }

    @Test("a one-shot fired by hand on a loop let go of ends, and lets go of the loop after its action")
    func fireByHandLetsGoOfLoop() throws {
        var watched: WeakReference<TimerLoop>?
        let ran = Locked(0)
        var timer: LoopTimer<MonotonicClock>?
        do {
            let loop = try TimerLoop.manual()
            let watch = WeakReference(loop)
            watched = watch
            timer = try loop.schedule(after: .seconds(60)) { _, _ in
                // The loop is alive while the action runs.
                ran.withLock { $0 += watch.object != nil ? 1 : 100 }
            }
        }
        #expect(watched?.object != nil)
        timer?.fire()
        #expect(ran.value == 1)
        #expect(timer?.isValid == false)
        #expect(watched?.object == nil, "the fire ended the loop's last timer")
        timer?.fire()
        #expect(ran.value == 1)
    }

    /// Invalidates `timer` when freed.
    private final class Invalidator: TimerCallbackHandler, @unchecked Sendable {
        let timer: AnyLoopTimer
        init(_ timer: AnyLoopTimer) { self.timer = timer }
        deinit { timer.invalidate() }
        func timerFired(_ timer: CallbackTimer, missed: UInt64) {}
    }

    @Test(
        "a deinit run inside a loop's own call (a fire, an advance) that invalidates the loop's last timer lets the loop go once the call returns",
        arguments: ["fire", "one-shot", "callbacks", "frame ticker"])
    func lastTimerEndedInsideALoopCall(_ holder: String) throws {
        // A manual loop that nobody holds but its one repeating timer's hold,
        // and something to free inside a call of the loop's: what it holds
        // invalidates that timer, which ends the hold there. The loop is
        // then freed when the call returns (were it freed inside the call,
        // its destroy would be refused, and the process stop).
        let watch: WeakReference<TimerLoop>
        var byHand: LoopTimer<MonotonicClock>?
        do {
            let loop = try TimerLoop.manual()
            watch = WeakReference(loop)
            let last = try loop.schedule(after: .seconds(3600), repeating: .seconds(3600)) { _, _ in }
            let invalidator = Invalidator(last)
            switch holder {
            case "fire":
                byHand = try loop.schedule(after: .seconds(60)) { _, _ in _ = invalidator }
            case "one-shot":
                try loop.schedule(after: .seconds(1)) { _, _ in _ = invalidator }
            case "callbacks":
                try loop.callbacks(invalidator).schedule(after: .seconds(1))
            default:
                _ = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 60)) { ticker, _ in
                    _ = invalidator
                    ticker.invalidate()
                }
            }
        }
        #expect(watch.object != nil, "the repeating timer holds the loop")
        if let byHand {
            byHand.fire()
        } else {
            try watch.object?.advance(by: .seconds(2))
        }
        #expect(watch.object == nil, "the loop's last timer ended in the call, and the loop with it")
    }

    @Test("self-invalidation races external invalidation; loops stopped and dropped with timers mid-callback")
    func selfAndExternalInvalidate() throws {
        let before = tokenCounts()
        for round in 0..<30 {
            let loop = try TimerLoop.startThread()
            runThreads(3) { thread in
                for i in 0..<300 {
                    let token = Token()
                    let slow = (i + thread + round) % 7 == 0
                    let timer = try! loop.schedule(
                        after: .nanoseconds(Int64((i * 37) % 5000)),
                        repeating: i % 2 == 0 ? .nanoseconds(500) : nil
                    ) { t, _ in
                        _ = token
                        if slow { sleepThread(.microseconds(50)) }
                        t.invalidate()
                        t.fire()
                        try? t.setTolerance(.nanoseconds(10))
                    }
                    if i % 3 == 0 { timer.invalidate() }
                    if i % 5 == 0 { timer.fire() }
                    if i % 4 == 0 { try? timer.setFireDate(loop.now(.monotonic)) }
                    if i % 6 == 0 { try? loop.add(timer, forMode: .common) }
                    if i % 2 == 0 { timer.invalidate() }
                }
            }
            // Some one-shots may still be pending: let them fire (a pending
            // timer keeps its loop, and its token, alive), then stop and drop
            // the loop while callbacks may run. The first round whose timers
            // do not all fire ends the test, rather than each waiting 30 s.
            let drained = waitUntil { loop.statistics.pending == 0 }
            loop.stop()
            try #require(drained, "timers still pending in round \(round)")
        }
        expectAllFreed(since: before)
    }

    @Test("invalidated while its action sleeps, then the loop stopped and released")
    func invalidateThenStopLoop() throws {
        let before = tokenCounts()
        for _ in 0..<50 {
            let loop = try TimerLoop.startThread()
            let inAction = Locked(false)
            do {
                let token = Token()
                let timer = try loop.schedule(after: .zero, repeating: .microseconds(10)) { _, _ in
                    _ = token
                    inAction.withLock { $0 = true }
                    sleepThread(.milliseconds(2))
                }
                _ = waitUntil { inAction.value }
                timer.invalidate()
            }
            loop.stop()
        }
        expectAllFreed(since: before)
    }
}
