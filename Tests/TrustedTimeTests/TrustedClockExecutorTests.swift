import Testing
import TimerKit
import TrustedTime

// The trusted clock's sleeps and its readings' boot-clock sleeps, from an
// actor or a task on a real TimerLoop: they end on the loop's thread with no
// hop (no job queued on the loop from another thread), never early, and a
// change of the samples or a cancellation still ends them. Only "on that
// thread", "no hop" and "never early" are checked, never how late.

/// What a run of sleeps saw: how many ended early, how many off the loop's
/// thread, and how many jobs other threads queued on the loop (thread hops).
struct SleepsOnALoop: Equatable {
    var early = 0
    var offThread = 0
    var hops = 0
}

/// Runs `times` sleeps, each until `deadline()` by `sleep`, and counts on
/// `loop` what ``SleepsOnALoop`` says; `reached` tells a deadline reached.
/// It runs on the caller's executor, as the sleeps do.
nonisolated(nonsending)
func sleepsOnALoop<Deadline>(
    _ times: Int, on loop: TimerLoop, deadline: () -> Deadline,
    sleep: nonisolated(nonsending) (Deadline) async throws -> Void, reached: (Deadline) -> Bool
) async throws -> SleepsOnALoop {
    let hopsBefore = loop.jobsFromOtherThreads
    var result = SleepsOnALoop()
    for _ in 0..<times {
        let deadline = deadline()
        try await sleep(deadline)
        if !reached(deadline) { result.early += 1 }
        if !loop.isRunningOnCurrentThread { result.offThread += 1 }
    }
    result.hops = loop.jobsFromOtherThreads - hopsBefore
    return result
}

/// An actor whose executor is a loop, sleeping on the trusted clock and on
/// clock readings.
actor TrustedLoopActor {
    let loop: TimerLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    init(loop: TimerLoop) { self.loop = loop }

    /// `times` sleeps of `step` on `readings`' boot clock.
    func readingsSleeps(_ times: Int, of step: Duration, on readings: any ClockReadings)
        async throws -> SleepsOnALoop
    {
        try await sleepsOnALoop(
            times, on: loop, deadline: { readings.boot + step },
            sleep: { try await readings.sleep(until: $0, tolerance: nil) },
            reached: { readings.boot >= $0 })
    }

    /// `times` sleeps of `step` on `clock`.
    func clockSleeps(_ times: Int, of step: Duration, on clock: TrustedClock)
        async throws -> SleepsOnALoop
    {
        try await sleepsOnALoop(
            times, on: loop, deadline: { clock.now.advanced(by: step) },
            sleep: { try await clock.sleep(until: $0) }, reached: { clock.now >= $0 })
    }

    /// One sleep on `clock` until `deadline`; whether it ended on the loop's
    /// thread.
    func sleep(on clock: TrustedClock, until deadline: TrustedTime) async throws -> Bool {
        try await clock.sleep(until: deadline)
        return loop.isRunningOnCurrentThread
    }
}

/// A clock on `readings`, synced to the year 2033 now.
private func syncedClock(_ readings: any ClockReadings) throws -> TrustedClock {
    let clock = TrustedClock(readings: readings)
    let boot = readings.boot
    try clock.sync(with: TimeSample(serverTime: .seconds(2_000_000_000), sentAt: boot, receivedAt: boot))
    return clock
}

@Suite("TrustedClock on a loop's executor")
struct TrustedClockExecutorTests {
    /// The readings a sleep on `loop` can go through with no hop.
    static let readingsKinds = ["loop", "system"]

    static func readings(_ kind: String, _ loop: TimerLoop) -> any ClockReadings {
        kind == "loop" ? LoopClockReadings(loop: loop) : SystemClockReadings()
    }

    @Test("clock readings' sleeps from an actor on a loop end there, with no hop, never early",
          arguments: readingsKinds)
    func readingsSleepDoesNotHop(kind: String) async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let firedBefore = loop.statistics.fired
        let result = try await TrustedLoopActor(loop: loop).readingsSleeps(
            10, of: .milliseconds(2), on: Self.readings(kind, loop))
        #expect(result == SleepsOnALoop())
        // The sleeps' timers were this loop's. (A sleep whose deadline had
        // passed when it began, on a thread held up for 2 ms, needs none.)
        #expect(loop.statistics.fired - firedBefore >= 5)
    }

    @Test("the trusted clock's sleeps from an actor on a loop end there, with no hop, never early",
          arguments: readingsKinds)
    func trustedSleepDoesNotHop(kind: String) async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let clock = try syncedClock(Self.readings(kind, loop))
        let firedBefore = loop.statistics.fired
        let result = try await TrustedLoopActor(loop: loop).clockSleeps(10, of: .milliseconds(2), on: clock)
        #expect(result == SleepsOnALoop())
        #expect(loop.statistics.fired - firedBefore >= 5)
    }

    @Test("the trusted clock's sleeps from a task that prefers a loop end there, with no hop")
    func trustedSleepInATaskDoesNotHop() async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let clock = try syncedClock(LoopClockReadings(loop: loop))
        let result = try await Task(executorPreference: loop) {
            try await sleepsOnALoop(
                10, on: loop, deadline: { clock.now.advanced(by: .milliseconds(2)) },
                sleep: { try await clock.sleep(until: $0) }, reached: { clock.now >= $0 })
        }.value
        #expect(result == SleepsOnALoop())
    }

    @Test("on a loop's executor, a sync that moves server time past the deadline ends the sleep there")
    func syncEndsTheSleepOnTheLoop() async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let readings = LoopClockReadings(loop: loop)
        let clock = try syncedClock(readings)
        let deadline = clock.now.advanced(by: .seconds(3600))
        let actor = TrustedLoopActor(loop: loop)
        let pendingBefore = loop.statistics.pending
        let sleeper = Task { try await actor.sleep(on: clock, until: deadline) }
        try await waitFor { loop.statistics.pending > pendingBefore }
        // The server says it is an hour later: the deadline has passed.
        let boot = readings.boot
        try clock.sync(
            with: TimeSample(
                serverTime: clock.now.sinceEpoch + .seconds(3600), sentAt: boot, receivedAt: boot))
        let ended = try #require(await valueWithin60Seconds(of: sleeper), "the sleep did not end")
        #expect(try ended.get(), "the sleep did not end on the loop's thread")
        #expect(clock.now >= deadline)
    }

    @Test("on a loop's executor, a cancelled sleep of the trusted clock throws CancellationError")
    func cancelledSleepOnTheLoop() async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let clock = try syncedClock(LoopClockReadings(loop: loop))
        let actor = TrustedLoopActor(loop: loop)
        let pendingBefore = loop.statistics.pending
        let sleeper = Task { try await actor.sleep(on: clock, until: clock.now.advanced(by: .seconds(3600))) }
        try await waitFor { loop.statistics.pending > pendingBefore }
        sleeper.cancel()
        let ended = try #require(await valueWithin60Seconds(of: sleeper), "the sleep did not end")
        #expect(throws: CancellationError.self) { try ended.get() }
        // Its timer left the loop.
        try await waitFor { loop.statistics.pending == pendingBefore }
    }
}
