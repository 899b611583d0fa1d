import Testing

@testable import TimerKit

// A timer, frame ticker or perform request that can no longer fire lets go
// of its action, and so of what the action captures, as Timer and
// CADisplayLink let go of their targets on invalidate. The cycle these
// tests build is the usual one: an owner keeps its timer, and the timer's
// action captures the owner. While the timer can fire, the cycle is the
// caller's to break (the docs say so); once it cannot, it must not keep the
// owner alive.

/// Counts the deinits of the `Watched` owners made by `make`, and returns a
/// weak reference to each for the test to inspect.
private final class Owners: @unchecked Sendable {
    let freed = Locked(0)

    func make() -> Watched {
        Watched(onDeinit: { [freed] in freed.withLock { $0 += 1 } })
    }
}

@Suite("Released actions")
struct ReleasedActionTests {
    @Test("an invalidated LoopTimer lets go of its action, scheduled or not")
    func invalidatedTimerLetsGo() throws {
        let loop = try TimerLoop.manual()
        let owners = Owners()
        var timers: [AnyLoopTimer] = []
        for scheduled in [true, false] {
            let owner = owners.make()
            let timer = try LoopTimer(after: .seconds(1), repeating: .seconds(1)) { _, _ in _ = owner }
            owner.timer = timer
            if scheduled { try loop.add(timer, forMode: .default) }
            timers.append(timer)
        }
        // The cycle holds while the timers can fire.
        #expect(owners.freed.value == 0)
        for timer in timers { timer.invalidate() }
        #expect(owners.freed.value == 2)
        // The timers themselves stay usable, as invalid timers.
        for timer in timers {
            #expect(!timer.isValid)
            timer.fire()
            #expect(throws: TimerError.invalidated) { try timer.setTolerance(.seconds(1)) }
        }
        #expect(loop.statistics.pending == 0)
    }

    @Test("a one-shot lets go of its action once it has fired, by its loop or by hand")
    func firedOneShotLetsGo() throws {
        let loop = try TimerLoop.manual()
        let owners = Owners()
        let fires = Locked(0)
        var timers: [AnyLoopTimer] = []
        for scheduled in [true, false] {
            let owner = owners.make()
            let timer = try LoopTimer(after: .seconds(1)) { _, _ in
                _ = owner
                fires.withLock { $0 += 1 }
            }
            owner.timer = timer
            if scheduled { try loop.add(timer, forMode: .default) } else { timer.fire() }
            timers.append(timer)
        }
        #expect(fires.value == 1 && owners.freed.value == 1)
        try loop.advance(by: .seconds(1))
        #expect(fires.value == 2 && owners.freed.value == 2)
        #expect(timers.allSatisfy { !$0.isValid })
    }

    @Test("a repeating timer keeps its action while it fires, and a one-shot that reschedules itself keeps it")
    func liveTimersKeepTheirAction() throws {
        let loop = try TimerLoop.manual()
        let owners = Owners()
        let fires = Locked<[String]>([])
        let repeating: LoopTimer<MonotonicClock>
        let again: LoopTimer<MonotonicClock>
        do {
            let repeatingOwner = owners.make()
            repeating = try LoopTimer(after: .seconds(1), repeating: .seconds(1)) { _, _ in
                _ = repeatingOwner
                fires.withLock { $0.append("repeating") }
            }
            repeatingOwner.timer = repeating
            let againOwner = owners.make()
            again = try LoopTimer(after: .seconds(1)) { timer, _ in
                _ = againOwner
                fires.withLock { $0.append("again") }
                if fires.value.count(where: { $0 == "again" }) == 1 {
                    try! timer.setFireDate(loop.now(.monotonic) + .seconds(1))
                }
            }
            againOwner.timer = again
        }
        try loop.add(repeating, forMode: .default)
        try loop.add(again, forMode: .default)
        try loop.advance(by: .seconds(1))
        #expect(owners.freed.value == 0)
        try loop.advance(by: .seconds(1))
        #expect(fires.value.count(where: { $0 == "again" }) == 2)
        #expect(fires.value.count(where: { $0 == "repeating" }) == 2)
        // The rescheduled one-shot fired for good the second time.
        #expect(owners.freed.value == 1 && repeating.isValid)
        repeating.invalidate()
        #expect(owners.freed.value == 2)
    }

    @Test("what the action captures is let go of with the timer's lock released: its deinit may use the timer")
    func captureDeinitUsesTheTimer() throws {
        let loop = try TimerLoop.manual()
        let owners = Owners()
        var timer: LoopTimer<MonotonicClock>?
        do {
            // The action holds the only reference to its owner, whose deinit
            // invalidates the timer: letting go of the action with the lock
            // held would deadlock there.
            let owner = owners.make()
            let made = try LoopTimer(after: .seconds(1), repeating: .seconds(1)) { _, _ in _ = owner }
            owner.timer = made
            try loop.add(made, forMode: .default)
            timer = made
        }
        #expect(owners.freed.value == 0)
        timer?.invalidate()
        #expect(owners.freed.value == 1)
        #expect(timer?.isValid == false)
    }

    @Test("a perform request kept by what its action captures lets go of it once it runs or is cancelled")
    func performRequestLetsGo() throws {
        let loop = try TimerLoop.manual()
        let owners = Owners()
        let ran = Locked(0)
        /// Keeps its request and its owner: the action captures the holder,
        /// so holder → request → timer → action → holder is a cycle.
        final class Holder: @unchecked Sendable {
            var request: PerformRequest?
            var owner: Watched?
        }
        for cancelled in [false, true] {
            let holder = Holder()
            holder.owner = owners.make()
            holder.request = try loop.perform(after: .seconds(1)) {
                _ = holder
                ran.withLock { $0 += 1 }
            }
            if cancelled { holder.request?.cancel() }
        }
        // The cancelled request's holder is gone; the pending one is kept by
        // the loop until it runs.
        #expect(owners.freed.value == 1)
        try loop.advance(by: .seconds(1))
        #expect(ran.value == 1 && owners.freed.value == 2)
    }

    @Test("an invalidated FrameTicker lets go of its action")
    func invalidatedTickerLetsGo() throws {
        let loop = try TimerLoop.manual()
        let owners = Owners()
        let frames = Locked(0)
        var ticker: FrameTicker?
        do {
            let owner = owners.make()
            ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 10)) { _, _ in
                _ = owner
                frames.withLock { $0 += 1 }
            }
        }
        try loop.advance(by: .milliseconds(250))
        #expect(frames.value == 2 && owners.freed.value == 0)
        ticker?.invalidate()
        #expect(owners.freed.value == 1)
        try loop.advance(by: .milliseconds(250))
        #expect(frames.value == 2 && ticker?.isValid == false)
    }
}
