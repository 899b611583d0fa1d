import CTimerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One `sleep(until:tolerance:)` of a clock, served by a one-shot timer of the
/// C core on some loop, resumed from the loop's thread.
///
/// Exactly one of four things ends a sleep: the timer fires (its callback
/// resumes the task), the task is cancelled, the loop's run fails, or, on a
/// manual loop, the deadline turns out to have passed once the timer is in.
/// The last three must take the timer back from the C core first, and
/// `tk_loop_cancel` succeeds for only one caller and never after the timer
/// fired: that decides who resumes the task. A cancelled sleep leaves the
/// deadline heap at once.
final class Sleeper: LoopWaiter {
    private struct State {
        var continuation: CheckedContinuation<Void, any Error>?
        var id: tk_timer_id = 0
        var cancelled = false
    }

    private let state = ThreadLocked(State())
    private let loop: TimerLoop
    private let settled: (@Sendable () -> Void)?

    private init(loop: TimerLoop, settled: (@Sendable () -> Void)?) {
        self.loop = loop
        self.settled = settled
    }

    /// As ``sleep(on:clock:until:tolerance:registered:settled:isolation:)``,
    /// for a job that `loop` (real or manual) runs. The task prefers the loop
    /// while it sleeps, so that the loop's thread resumes it onto the loop
    /// itself: the runtime resumes a continuation on the task's preferred
    /// executor, by default the global one, which would then hop back to the
    /// loop.
    nonisolated(nonsending)
    static func sleepOnItsLoop(
        _ loop: TimerLoop, clock: ClockID, until deadline: Int64, tolerance: Duration?,
        registered: (@Sendable () -> Void)? = nil, settled: (@Sendable () -> Void)? = nil
    ) async throws {
        try await withTaskExecutorPreference(loop) {
            try await sleep(
                on: loop, clock: clock, until: deadline, tolerance: tolerance, registered: registered,
                settled: settled)
        }
    }

    /// Suspends until `clock` on `loop` reads `deadline` (nanoseconds), at most
    /// `tolerance` later. `registered` runs once the timer is scheduled,
    /// `settled` once the sleep has ended (however it ended).
    ///
    /// It runs, and resumes, on the caller's executor (`isolation`): a sleep
    /// of a job on a loop's executor, whose timer is on that loop, ends on
    /// the loop's thread without a hop.
    static func sleep(
        on loop: TimerLoop, clock: ClockID, until deadline: Int64, tolerance: Duration?,
        registered: (@Sendable () -> Void)? = nil, settled: (@Sendable () -> Void)? = nil,
        isolation: isolated (any Actor)? = #isolation
    ) async throws {
        let sleeper = Sleeper(loop: loop, settled: settled)
        // A negative tolerance counts as none (documented on the sleeps).
        let leeway = max(0, tolerance?.saturatingNanoseconds ?? 0)
        let spec = tk_timer_spec(
            clock: clock.rawClock, delay_ns: 0, deadline_ns: deadline, interval_ns: 0,
            leeway_ns: leeway, modes: TK_MODES_ALL, flags: UInt32(TK_TIMER_ABSOLUTE))
        try await withTaskCancellationHandler(
            operation: {
                _ = isolation  // captured: the closure runs isolated to it
                try await withCheckedThrowingContinuation(isolation: isolation) { continuation in
                    sleeper.start(continuation, spec, registered: registered)
                }
            },
            onCancel: { sleeper.end(by: CancellationError()) },
            isolation: isolation)
    }

    private func start(
        _ continuation: CheckedContinuation<Void, any Error>, _ spec: tk_timer_spec,
        registered: (@Sendable () -> Void)?
    ) {
        let failure: (any Error)? = state.withLock { state in
            if state.cancelled { return CancellationError() }
            do throws(TimerError) {
                try loop.register(self)
                var spec = spec
                var id: tk_timer_id = 0
                // The loop's reference, released by the loop's release handler.
                let context = Unmanaged.passRetained(self)
                let result = tk_loop_schedule(
                    loop.handle, &spec,
                    { _, _, _, context in
                        Unmanaged<Sleeper>.fromOpaque(context!).takeUnretainedValue().wake()
                    },
                    context.toOpaque(), &id)
                if result < 0 {
                    context.release()
                    loop.unregister(self)
                    _ = try TimerError.check(result, "tk_loop_schedule")
                }
                state.id = id
                state.continuation = continuation
                // Under the lock, so that it comes before the wake-up's `settled`.
                registered?()
                return nil
            } catch {
                return error
            }
        }
        if let failure { return continuation.resume(throwing: failure) }
        // A manual loop's time moves only when told: if it reached the
        // deadline before the timer was in (another thread advanced it, or it
        // was there already), no pass may come to fire it. The sleep ends now.
        // A deadline of Int64.max ns (one at or past the end of the clock's
        // range) never comes, as a timer's there never fires, even to a clock
        // that has stopped there.
        if loop.isManual && spec.deadline_ns != .max {
            var now: Int64 = 0
            SystemError.expectSuccess(tk_loop_now(loop.handle, spec.clock, &now), "tk_loop_now")
            if now >= spec.deadline_ns { end(by: nil) }
        }
    }

    /// The timer fired.
    private func wake() {
        let continuation = state.withLock { state in
            defer { state.continuation = nil }
            return state.continuation
        }
        loop.unregister(self)
        settled?()
        continuation?.resume()
    }

    /// The loop's run failed: nothing will fire the timer.
    func loopFailed(_ error: TimerError) {
        end(by: error)
    }

    /// Ends the sleep with `error` (or, with `nil`, as if it had fired), if
    /// the timer can still be taken back.
    private func end(by error: (any Error)?) {
        let id = state.withLock { state in
            state.cancelled = true
            return state.id
        }
        // 0: not scheduled yet; `start` sees `cancelled` and ends it.
        guard id != 0 else { return }
        // -ENOENT: the timer fired, or another ending took it; they resume.
        let result = tk_loop_cancel(loop.handle, id)
        if result == -ENOENT { return }
        SystemError.expectSuccess(result, "tk_loop_cancel")
        let continuation = state.withLock { state in
            defer { state.continuation = nil }
            return state.continuation
        }
        loop.unregister(self)
        settled?()
        if let error { continuation?.resume(throwing: error) } else { continuation?.resume() }
    }
}

/// The loop that serves the sleeps of the machine's clocks (``MonotonicClock``,
/// ``BootClock``, ``WallClock``), on a thread of its own, started the first
/// time a sleep needs it.
final class SleepService: Sendable {
    /// The service the clocks use. Its loop is in reach of anyone
    /// (``QueueTimer/loop``, or a timer's action calling
    /// ``TimerLoop/current()``), and a stop of it would end the thread,
    /// leaving every later sleep, tick and queue timer of the process
    /// waiting forever: a run that was stopped starts again.
    static let shared = SleepService { loop in
        while true {
            let result = tk_loop_run(loop.handle, 1 << TK_MODE_DEFAULT, Int64.max, 0)
            if result != Int32(TK_RUN_STOPPED.rawValue) { return result }
        }
    }

    /// Makes the loop.
    private let makeLoop: @Sendable () throws(TimerError) -> TimerLoop
    /// How its thread runs the loop.
    private let run: @Sendable (TimerLoop) -> Int32
    /// The loop, once started.
    private let started = ThreadLocked<TimerLoop?>(nil)

    /// A service whose thread runs the loop `makeLoop` makes with `run`
    /// (tests pass ones that fail). Nothing starts until a sleep, a tick or
    /// a queue timer needs the loop.
    init(
        makeLoop: @escaping @Sendable () throws(TimerError) -> TimerLoop = { () throws(TimerError) in try TimerLoop() },
        run: @escaping @Sendable (TimerLoop) -> Int32
    ) {
        self.makeLoop = makeLoop
        self.run = run
    }

    /// The loop, started by the first call that needs it. A start that fails
    /// (out of descriptors, say) throws, and the next call tries again, so a
    /// passing shortage does not leave the process without sleeps. A loop
    /// whose run failed stays: its failure is what its waiters are told.
    func loop() throws(TimerError) -> TimerLoop {
        try started.withLock { (started) throws(TimerError) -> TimerLoop in
            if let started { return started }
            let loop = try makeLoop()
            try LoopThread.start(loop, run: run)
            started = loop
            return loop
        }
    }

    /// Suspends until `clock` reads `deadline` (nanoseconds), at most
    /// `tolerance` later.
    nonisolated(nonsending)
    func sleep(clock: ClockID, until deadline: Int64, tolerance: Duration?) async throws {
        try await Sleeper.sleep(
            on: loop(), clock: clock, until: deadline, tolerance: tolerance)
    }
}
