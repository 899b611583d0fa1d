import Testing
import TimerKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// A TimerLoop as a Swift executor: actors and tasks run on the loop's thread,
// sleeps on TimerKit clocks resume there without a hop, jobs queued from
// many threads all run, one at a time. Real loops: only "on that thread",
// "fired" and "never early" are checked, never how late.

/// An actor whose executor is a loop.
actor LoopActor {
    let loop: TimerLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    var count = 0
    var fired = 0
    /// When each of `loopSleeps`' sleeps ended, on the loop's boot clock.
    let wakes = Locked<[Duration]>([])
    /// Ticks `ticks` has taken.
    let ticksTaken = Locked(0)

    init(loop: TimerLoop) { self.loop = loop }

    func increment() { count += 1 }

    func onLoopThread() -> Bool { loop.isRunningOnCurrentThread }

    /// Sleeps `times` times for `step` on the monotonic clock (by deadline)
    /// and on the boot clock (by duration); how many ended early, whether
    /// each ended on the loop's thread, and how many jobs other threads
    /// queued on the loop meanwhile (thread hops).
    func sleeps(_ times: Int, of step: Duration) async throws -> (early: Int, offThread: Int, hops: Int) {
        let hopsBefore = loop.jobsFromOtherThreads
        var early = 0
        var offThread = 0
        for round in 0..<times {
            if round % 2 == 0 {
                let deadline = MonotonicClock.now + step
                try await MonotonicClock().sleep(until: deadline)
                if MonotonicClock.now < deadline { early += 1 }
            } else {
                let deadline = BootClock.now + step
                try await BootClock().sleep(for: step)
                if BootClock.now < deadline { early += 1 }
            }
            if !loop.isRunningOnCurrentThread { offThread += 1 }
        }
        return (early, offThread, loop.jobsFromOtherThreads - hopsBefore)
    }

    /// As `sleeps`, through the loop's own `sleep(until:tolerance:)`, on
    /// the boot clock.
    func loopSleeps(_ times: Int, of step: Duration) async throws -> (early: Int, offThread: Int, hops: Int) {
        let hopsBefore = loop.jobsFromOtherThreads
        var early = 0
        var offThread = 0
        for _ in 0..<times {
            let deadline = loop.now(.boot) + step
            try await loop.sleep(until: deadline)
            wakes.withLock { $0.append(loop.now(.boot).offset) }
            if loop.now(.boot) < deadline { early += 1 }
            if !loop.isRunningOnCurrentThread { offThread += 1 }
        }
        return (early, offThread, loop.jobsFromOtherThreads - hopsBefore)
    }

    /// As `loopSleeps`, through `clock`'s own sleep (`clock.loop` is the
    /// actor's loop).
    func manualClockSleeps(
        _ clock: ManualClock, _ times: Int, of step: Duration, byDuration: Bool = false
    ) async throws -> Int {
        let hopsBefore = loop.jobsFromOtherThreads
        for _ in 0..<times {
            if byDuration {
                try await clock.sleep(for: step)
            } else {
                try await clock.sleep(until: clock.now + step)
            }
            wakes.withLock { $0.append(clock.now.offset) }
        }
        return loop.jobsFromOtherThreads - hopsBefore
    }

    /// Takes `count` ticks every `step` on the actor's loop; how many came
    /// off the loop's thread and how many jobs other threads queued on the
    /// loop meanwhile.
    func ticks(_ count: Int, every step: Duration) async throws -> (offThread: Int, hops: Int) {
        let hopsBefore = loop.jobsFromOtherThreads
        var offThread = 0
        var taken = 0
        for try await _ in try TimerTicks(every: step, on: loop) {
            if !loop.isRunningOnCurrentThread { offThread += 1 }
            ticksTaken.withLock { $0 += 1 }
            taken += 1
            if taken == count { break }
        }
        // And through the iterator's next() called directly.
        var ticks = try TimerTicks(every: step, on: loop).makeAsyncIterator()
        for _ in 0..<count {
            _ = try await ticks.next()
            ticksTaken.withLock { $0 += 1 }
            if !loop.isRunningOnCurrentThread { offThread += 1 }
        }
        return (offThread, loop.jobsFromOtherThreads - hopsBefore)
    }

    /// Schedules a timer on the actor's loop whose action touches the
    /// actor's state, isolated, from the loop's thread.
    func scheduleTimer(fires: Int) throws -> LoopTimer<MonotonicClock> {
        try loop.schedule(after: .milliseconds(1), repeating: .milliseconds(1)) { timer, _ in
            self.assumeIsolated { actor in
                actor.fired += 1
                if actor.fired == fires { timer.invalidate() }
            }
        }
    }
}

@Suite("TimerLoop as an executor")
struct TimerLoopExecutorTests {
    @Test("an actor on a loop runs on the loop's thread, and only there")
    func actorRunsOnLoop() async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let actor = LoopActor(loop: loop)
        #expect(await actor.onLoopThread())
        #expect(!loop.isRunningOnCurrentThread)
    }

    @Test("sleeps on TimerKit clocks resume on the actor's loop, never early")
    func sleepsDoNotHop() async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let actor = LoopActor(loop: loop)
        let firedBefore = loop.statistics.fired
        let result = try await actor.sleeps(20, of: .milliseconds(2))
        #expect(result.early == 0)
        #expect(result.offThread == 0)
        #expect(result.hops == 0)
        // The sleeps' timers were this loop's. (A sleep whose deadline had
        // passed when it began, on a thread held up for 2 ms, needs none.)
        #expect(loop.statistics.fired - firedBefore >= 10)
    }

    @Test("the loop's own sleep from an actor on it ends there, with no hop, never early")
    func loopSleepDoesNotHop() async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let actor = LoopActor(loop: loop)
        let firedBefore = loop.statistics.fired
        let result = try await actor.loopSleeps(10, of: .milliseconds(2))
        #expect(result.early == 0)
        #expect(result.offThread == 0)
        #expect(result.hops == 0)
        #expect(loop.statistics.fired - firedBefore >= 5)
    }

    @Test("ticks on an actor's loop, iterated there, come with no hop")
    func ticksDoNotHop() async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let result = try await LoopActor(loop: loop).ticks(10, every: .milliseconds(2))
        #expect(result.offThread == 0)
        #expect(result.hops == 0)
    }

    @Test("a task that prefers the loop runs there, and so do its sleeps")
    func taskExecutorPreference() async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let firedBefore = loop.statistics.fired
        let result = await Task(executorPreference: loop) { () -> (Bool, Bool, Bool) in
            let first = loop.isRunningOnCurrentThread
            // Far enough ahead that the sleep begins before it.
            let deadline = MonotonicClock.now + .milliseconds(50)
            try? await MonotonicClock().sleep(until: deadline)
            return (first, loop.isRunningOnCurrentThread, MonotonicClock.now >= deadline)
        }.value
        #expect(result.0)
        #expect(result.1)
        #expect(result.2)
        #expect(loop.statistics.fired - firedBefore == 1)  // the sleep's timer
    }

    @Test("jobs queued from many threads all run, one at a time")
    func manyThreads() async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let actor = LoopActor(loop: loop)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<2_000 { await actor.increment() }
                }
            }
        }
        #expect(await actor.count == 16_000)
    }

    @Test("the actor's timers fire on its loop, isolated to it")
    func timersOnTheActorsLoop() async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let actor = LoopActor(loop: loop)
        let timer = try await actor.scheduleTimer(fires: 5)
        while timer.isValid { try await MonotonicClock().sleep(for: .milliseconds(2)) }
        #expect(await actor.fired == 5)
    }

    @Test("on a manual loop, jobs wait for a run and run on the thread that runs it")
    func manualLoopRunsJobs() async throws {
        let loop = try TimerLoop.manual()
        let actor = LoopActor(loop: loop)
        let done = Locked<Bool?>(nil)
        Task { done.withLock { $0 = nil }; let on = await actor.onLoopThread(); done.withLock { $0 = on } }
        // Nothing runs the loop yet: the job waits.
        try await Task.sleep(for: .milliseconds(20))
        #expect(done.value == nil)
        var passes = 0
        while done.value == nil && passes < 100_000 {
            _ = try loop.runOnce(waiting: false)
            passes += 1
            if done.value == nil { await Task.yield() }
        }
        #expect(done.value == true)
    }

    @Test("a manual run serves jobs queued by jobs at the time they were queued, before time moves on")
    func manualRunServesJobChains() throws {
        let loop = try TimerLoop.manual()
        let log = Locked<[String]>([])
        try loop.schedule(after: .seconds(1)) { _, _ in
            // A task that prefers the loop: its start is a job, and its body
            // runs in a job of its own.
            Task(executorPreference: loop) { [log] in
                log.withLock { $0.append("task at \(loop.now(.monotonic).offset)") }
            }
        }
        try loop.schedule(after: .seconds(3)) { _, _ in
            log.withLock { $0.append("timer at \(loop.now(.monotonic).offset)") }
        }
        #expect(try loop.run(for: .seconds(10)) == .timedOut)
        #expect(log.value == ["task at 1.0 seconds", "timer at 3.0 seconds"])
    }

    @Test("an actor on a manual loop sleeps on it with no hop: one run takes the sleep to its end, at its end")
    func manualLoopSleepFromActor() async throws {
        let loop = try TimerLoop.manual()
        let actor = LoopActor(loop: loop)
        let result = Task.detached { try await actor.loopSleeps(3, of: .seconds(5)) }
        // The actor's first job, queued from this thread.
        #expect(await waitUntilAsync { loop.jobsFromOtherThreads == 1 })
        #expect(try loop.run(for: .seconds(16)) == .timedOut)
        // Each sleep ended at its end, within the one run.
        #expect(actor.wakes.value == [.seconds(5), .seconds(10), .seconds(15)])
        // (Had a sleep been left behind, more runs let it end, so that the
        // task does.)
        var rounds = 0
        while actor.wakes.value.count < 3 && rounds < 1_000 {
            _ = try loop.run(for: .seconds(1))
            rounds += 1
            try await Task.sleep(for: .milliseconds(1))
        }
        let (early, offThread, hops) = try await result.value
        #expect(early == 0 && offThread == 0)
        #expect(hops == 0)
        #expect(loop.jobsFromOtherThreads == 1)
    }

    @Test(
        "a ManualClock's sleep from an actor on its loop, until an instant or for a duration: no hop, each sleep ends at its time within one run",
        arguments: [false, true])
    func manualClockSleepFromActor(byDuration: Bool) async throws {
        let clock = try ManualClock()
        let loop = clock.loop
        let actor = LoopActor(loop: loop)
        let start = clock.now.offset
        let result = Task.detached {
            try await actor.manualClockSleeps(clock, 3, of: .seconds(5), byDuration: byDuration)
        }
        #expect(await waitUntilAsync { loop.jobsFromOtherThreads == 1 })
        #expect(try loop.run(for: .seconds(16)) == .timedOut)
        #expect(actor.wakes.value == [start + .seconds(5), start + .seconds(10), start + .seconds(15)])
        var rounds = 0
        while actor.wakes.value.count < 3 && rounds < 1_000 {
            _ = try loop.run(for: .seconds(1))
            rounds += 1
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(try await result.value == 0)
    }

    @Test("ticks iterated by an actor on a manual loop come with no hop, all within one run")
    func manualLoopTicksFromActor() async throws {
        let loop = try TimerLoop.manual()
        let actor = LoopActor(loop: loop)
        let result = Task.detached { try await actor.ticks(3, every: .seconds(1)) }
        #expect(await waitUntilAsync { loop.jobsFromOtherThreads == 1 })
        #expect(try loop.run(for: .seconds(10)) == .timedOut)
        #expect(actor.ticksTaken.value == 6)
        var rounds = 0
        while actor.ticksTaken.value < 6 && rounds < 1_000 {
            _ = try loop.run(for: .seconds(1))
            rounds += 1
            try await Task.sleep(for: .milliseconds(1))
        }
        let (offThread, hops) = try await result.value
        #expect(offThread == 0)
        #expect(hops == 0)
    }

    @Test("runOnce() runs the jobs even when a timer is due at every pass")
    func jobsRunBesideAlwaysDueTimer() async throws {
        let loop = try TimerLoop.manual()
        let due = AlwaysDue(loop: loop)
        try due.arm()
        let actor = LoopActor(loop: loop)
        let done = Locked(false)
        Task { await actor.increment(); done.withLock { $0 = true } }
        // Each waiting run fires the timer and returns; the pass that does
        // so must still run the job queued meanwhile.
        var passes = 0
        while !done.value && passes < 100_000 {
            #expect(try loop.runOnce() == .passed)
            passes += 1
            await Task.yield()
        }
        // `done` is set once the actor's job has run (on this thread, in a
        // pass); asking the actor now would queue a job no run serves.
        #expect(done.value)
        #expect(due.fires.value == passes)
        due.stop()
    }
}

/// A one-shot timer due at once that schedules the next one from its
/// action: a manual loop finds one due at every pass.
final class AlwaysDue: Sendable {
    let loop: TimerLoop
    let fires = Locked(0)
    private let current = Locked<LoopTimer<MonotonicClock>?>(nil)

    init(loop: TimerLoop) { self.loop = loop }

    func arm() throws {
        let timer = try loop.schedule(after: .zero) { [self] _, _ in
            fires.withLock { $0 += 1 }
            try? arm()
        }
        current.withLock { $0 = timer }
    }

    func stop() { current.withLock { $0?.invalidate(); $0 = nil } }
}

/// An actor whose job runs the loop nested, as a modal loop does.
actor ModalActor {
    let loop: TimerLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    let log = Locked<[String]>([])
    let otherQueued = Locked(false)
    init(loop: TimerLoop) { self.loop = loop }

    /// Runs the loop nested until another job has been queued, then some
    /// more passes, in which that job must not run.
    func modal() {
        log.withLock { $0.append("modal begins") }
        var passes = 0
        while !otherQueued.value && passes < 1_000_000 {
            _ = try? loop.runOnce(waiting: false)
            passes += 1
        }
        for _ in 0..<1_000 { _ = try? loop.runOnce(waiting: false) }
        log.withLock { $0.append("modal ends") }
    }

    func note(_ entry: String) { log.withLock { $0.append(entry) } }
}

@Suite("TimerLoop as an executor, nested runs")
struct TimerLoopExecutorNestingTests {
    @Test("a job that runs the loop nested does not run the actor's other jobs inside itself")
    func nestedRunKeepsJobsApart() async throws {
        let loop = try TimerLoop.manual()
        let actor = ModalActor(loop: loop)
        let first = Task { await actor.modal() }
        // Queued from another thread while the modal job runs the loop.
        let second = Task.detached {
            while actor.log.value.isEmpty { try? await Task.sleep(for: .milliseconds(1)) }
            actor.otherQueued.withLock { $0 = true }
            await actor.note("other job")
        }
        // The loop is run by this thread; the actor's jobs run in its passes.
        var passes = 0
        while actor.log.value.count < 3 && passes < 1_000_000 {
            _ = try loop.runOnce(waiting: false)
            passes += 1
            await Task.yield()
        }
        await first.value
        await second.value
        #expect(actor.log.value == ["modal begins", "modal ends", "other job"])
    }
}
