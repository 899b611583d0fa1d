import CTimerCore
import Glibc
import Testing

@testable import TimerKit

// When the run of a loop's own thread fails, nothing would ever fire the
// sleeps and ticks waiting there: they fail with the run's error instead of
// hanging, and so does every later one. The failures are injected: the
// thread's run is a stand-in that does real passes until told to fail, or a
// real tk_loop_run refused because another thread holds the loop.

/// A run for a loop thread: real passes of the loop until `fail` is set, then
/// the error `code`, as tk_loop_run would return it.
private final class FailingRun: Sendable {
    private let failing = Locked(false)
    let code: Int32

    init(failingWith code: Int32) { self.code = code }

    func run(_ loop: TimerLoop) -> Int32 {
        while !failing.value {
            let result = tk_loop_run(loop.handle, TK_MODE_DEFAULT, Int64.max, UInt32(TK_RUN_ONCE))
            if result < 0 { return result }
        }
        return -code
    }

    /// Makes the run fail at its next pass.
    func fail(_ loop: TimerLoop) {
        failing.withLock { $0 = true }
        loop.wakeUp()
    }

    /// The error the loop records when the run fails.
    var error: TimerError {
        .system(SystemError(errno: Errno(rawValue: code), function: "tk_loop_run"))
    }

    /// A new loop, run by a thread of its own with a run that fails with
    /// `code` when told to.
    static func startLoop(failingWith code: Int32) throws -> (FailingRun, TimerLoop) {
        let run = FailingRun(failingWith: code)
        let loop = try TimerLoop()
        try LoopThread.start(loop) { run.run($0) }
        return (run, loop)
    }
}

/// An actor whose executor is `loop`.
private actor Worker {
    let loop: TimerLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    init(loop: TimerLoop) { self.loop = loop }

    func nap() async throws { try await MonotonicClock().sleep(for: .seconds(3600)) }

    /// Whether the call runs on the loop's thread, isolated to the actor.
    func onLoop() -> Bool {
        loop.checkIsolated()
        return loop.isRunningOnCurrentThread
    }
}

@Suite("A loop whose run fails", .timeLimit(.minutes(5)))
struct LoopFailureTests {
    @Test("actors on it still run: a sleep there fails with the run's error, and later calls return")
    func actorsGoOn() async throws {
        let (run, loop) = try FailingRun.startLoop(failingWith: EIO)
        defer { loop.stop() }
        let expected = run.error
        let worker = Worker(loop: loop)
        #expect(await worker.onLoop())
        let ended = Locked(false)
        let napping = Task {
            defer { ended.withLock { $0 = true } }
            try await worker.nap()
        }
        #expect(await waitUntilAsync { loop.statistics.pending == 1 })
        run.fail(loop)
        // Its resumption is a job of the failed loop: the thread runs it.
        // (Waited for with a limit: with no thread to run it, it never ends.)
        try #require(await waitUntilAsync { ended.value }, "the actor's sleep never ended")
        await #expect(throws: expected) { try await napping.value }
        #expect(await worker.onLoop())
        await #expect(throws: expected) { try await worker.nap() }
        #expect(loop.failure == expected)
    }

    @Test("once its thread's run failed, another thread running the loop is not on it outside jobs")
    func anotherThreadRunsTheFailedLoop() async throws {
        let (run, loop) = try FailingRun.startLoop(failingWith: EIO)
        defer { loop.stop() }  // the thread that serves its jobs since the failure
        let worker = Worker(loop: loop)
        // A timer in a mode the failing thread never runs.
        let elsewhere = LoopMode("elsewhere")
        let onLoop = Locked<[Bool]>([])
        try loop.schedule(after: .milliseconds(1), in: elsewhere) { _, _ in
            onLoop.withLock { $0.append(loop.isRunningOnCurrentThread) }
            loop.stop()
        }
        #expect(await worker.onLoop())
        run.fail(loop)
        #expect(await waitUntilAsync { loop.failure != nil })
        // This thread runs the loop: the timer's action is not isolated to
        // the loop, whose own thread may be running a job of the actor.
        #expect(try loop.run(mode: elsewhere, for: .seconds(30)) == .stopped)
        #expect(onLoop.value == [false])
        #expect(!loop.isRunningOnCurrentThread)
        // The actor's jobs still run on the loop.
        #expect(await worker.onLoop())
    }

    @Test("a stop that comes as the run fails ends the thread, which lets go of the loop")
    func stopAsTheRunFails() throws {
        weak var released: TimerLoop?
        do {
            let loop = try TimerLoop()
            released = loop
            // The stop lands after the run's last look at it, before the
            // thread records the failure.
            try LoopThread.start(loop) { loop in
                loop.stop()
                return -EIO
            }
            #expect(waitUntil { loop.failure != nil })
        }
        #expect(waitUntil { released == nil }, "the thread still holds the loop")
    }

    @Test("a loop that could not be started is started by the next sleep that needs it")
    func startIsTriedAgain() async throws {
        let refusals = Locked(1)
        let service = SleepService(
            makeLoop: { () throws(TimerError) in
                let refused = refusals.withLock { left in
                    defer { left -= 1 }
                    return left > 0
                }
                if refused {
                    throw TimerError.system(SystemError(errno: Errno(rawValue: EMFILE), function: "tk_loop_create"))
                }
                return try TimerLoop()
            },
            run: { tk_loop_run($0.handle, 1 << TK_MODE_DEFAULT, Int64.max, 0) })
        await #expect(throws: TimerError.system(SystemError(errno: Errno(rawValue: EMFILE), function: "tk_loop_create"))) {
            try await service.sleep(clock: .monotonic, until: MonotonicClock.now.nanoseconds, tolerance: nil)
        }
        // Descriptors free again: the next sleep starts the loop and ends.
        let deadline = MonotonicClock.now + .milliseconds(2)
        try await service.sleep(clock: .monotonic, until: deadline.nanoseconds, tolerance: nil)
        #expect(MonotonicClock.now >= deadline)
        let loop = try service.loop()
        #expect(try service.loop() === loop)  // started once
        loop.stop()
    }

    @Test("sleeps waiting on it fail with the run's error, and so do later ones")
    func sleepsFail() async throws {
        let run = FailingRun(failingWith: ENOMEM)
        let service = SleepService { run.run($0) }
        let loop = try service.loop()
        defer { loop.stop() }  // the thread that serves its jobs since the failure
        let expected = run.error

        // One sleep that ends normally first: the loop works until it fails.
        try await service.sleep(
            clock: .monotonic, until: MonotonicClock.now.nanoseconds, tolerance: nil)

        let sleepers = (0..<3).map { index in
            Task {
                try await service.sleep(
                    clock: index == 0 ? .boot : .monotonic,
                    until: (MonotonicClock.now + .seconds(3600)).nanoseconds, tolerance: nil)
            }
        }
        #expect(await waitUntilAsync { loop.statistics.pending == 3 })
        #expect(loop.failure == nil)
        run.fail(loop)
        for sleeper in sleepers {
            await #expect(throws: expected) { try await sleeper.value }
        }
        #expect(loop.failure == expected)
        // Their timers were taken back.
        #expect(loop.statistics.pending == 0)
        // A later sleep fails at once.
        await #expect(throws: expected) {
            try await service.sleep(
                clock: .boot, until: (BootClock.now + .seconds(3600)).nanoseconds, tolerance: nil)
        }
    }

    @Test("ticks waiting on it throw the run's error, and later iterators too")
    func ticksFail() async throws {
        let (run, loop) = try FailingRun.startLoop(failingWith: EBADF)
        defer { loop.stop() }
        let expected = run.error
        let ticks = try TimerTicks(every: .seconds(3600), on: loop)
        let consumer = Task {
            var count = 0
            for try await _ in ticks { count += 1 }
            return count
        }
        #expect(await waitUntilAsync { loop.statistics.pending == 1 })
        run.fail(loop)
        await #expect(throws: expected) { try await consumer.value }
        var later = ticks.makeAsyncIterator()
        await #expect(throws: expected) { _ = try await later.next() }
    }

    @Test("a real tk_loop_run that fails (the loop is busy on another thread) ends the waits")
    func realRunFails() async throws {
        let loop = try TimerLoop()
        // Another thread runs the loop, so the loop thread's tk_loop_run is
        // refused with EBUSY the moment it starts.
        let runner = try TimerLoop.startThread()
        defer { runner.stop() }
        let holding = Locked(false)
        let held = Locked<TimerLoop.RunResult?>(nil)
        try runner.schedule(after: .zero) { _, _ in
            holding.withLock { $0 = true }
            let result = try? loop.run()  // until stopped below
            held.withLock { $0 = result }
        }
        #expect(await waitUntilAsync { holding.value })
        let ticks = try TimerTicks(every: .seconds(3600), on: loop)
        var iterator = ticks.makeAsyncIterator()
        let sleeper = Task {
            try await Sleeper.sleep(
                on: loop, clock: .monotonic, until: (MonotonicClock.now + .seconds(3600)).nanoseconds,
                tolerance: nil)
        }
        #expect(await waitUntilAsync { loop.statistics.pending == 2 })
        try LoopThread.start(loop) { tk_loop_run($0.handle, TK_MODE_DEFAULT, Int64.max, 0) }
        await #expect(throws: TimerError.busy) { try await sleeper.value }
        await #expect(throws: TimerError.busy) { _ = try await iterator.next() }
        #expect(loop.failure == .busy)
        loop.stop()
        #expect(await waitUntilAsync { held.value == .stopped })
    }

    @Test("a loop whose thread is only stopped has no failure")
    func stoppedIsNoFailure() throws {
        let loop = try TimerLoop.startThread()
        loop.stop()
        #expect(loop.failure == nil)
    }
}
