/// An asynchronous sequence of ticks from a repeating timer on `Clock`.
///
/// ```swift
/// for try await tick in try TimerTicks(every: .seconds(1), tolerance: .milliseconds(100)) {
///     render(remaining: deadline - tick.timestamp, skipped: tick.missed)
/// }
/// ```
///
/// Each iterator has a timer of its own, started when the iterator is made
/// (a `for try await` loop makes it as it begins): the first tick comes one
/// interval later, and the timer stays on its grid from there. Two tasks that iterate the same sequence each get
/// every tick; one iterator cannot be shared between tasks (it is not
/// `Sendable`), and a copy of it shares its timer: a second task's `next()`
/// on a copy while the first waits throws ``TimerError/iteratorInUse``.
///
/// Ticks never pile up: a slow consumer gets the next tick with the skipped
/// ones counted in ``Tick/missed`` and the latest grid instant in
/// ``Tick/timestamp``. The timer runs on a ``TimerLoop`` (TimerKit's own
/// background loop unless one is given) and is invalidated when the
/// iteration ends: the task is cancelled (`next()` returns `nil`), or the
/// iterator is dropped. Iterated by an actor or a task on the ticks' own
/// loop (real or manual), each tick arrives on the loop's thread with no hop.
public struct TimerTicks<Clock: TimerClock>: AsyncSequence, Sendable {
    /// One tick.
    public struct Tick: Sendable, Hashable {
        /// The grid instant the tick stands for: when it was due (the latest
        /// one, if ticks were merged). Whole intervals after the start, so a
        /// display computed from it changes exactly on the grid.
        public var timestamp: Clock.Instant
        /// Ticks skipped before this one: fires the loop missed by whole
        /// intervals, plus ticks that came while the consumer was still busy
        /// with an earlier one (they are merged into the next tick rather
        /// than queued).
        public var missed: UInt64
    }

    /// Each element is a ``Tick``.
    public typealias Element = Tick

    /// Iterating throws only ``TimerError``.
    public typealias Failure = TimerError

    let interval: Duration
    let tolerance: Duration
    let clock: Clock
    let loop: TimerLoop?
    let mode: LoopMode

    /// Ticks every `interval` on `clock`.
    ///
    /// - Parameters:
    ///   - interval: the time between ticks, at least 1 ns (rounded up to
    ///     whole nanoseconds, as every timer's grid is).
    ///   - tolerance: how late a tick may come to share a wake-up (≥ 0).
    ///   - clock: the clock the ticks are measured on.
    ///   - loop: the loop to run the timers on; by default TimerKit's
    ///     background loop, or for a ``ManualClock`` its ``ManualClock/loop``.
    ///   - mode: the mode of `loop` the timers tick in.
    /// - Throws: ``TimerError/invalidInterval(_:)``,
    ///   ``TimerError/negativeTolerance(_:)``.
    public init(
        every interval: Duration,
        tolerance: Duration = .zero,
        clock: Clock,
        on loop: TimerLoop? = nil,
        in mode: LoopMode = .default
    ) throws(TimerError) {
        // The grid the timer runs on: in whole nanoseconds, rounded up.
        self.interval = .nanoseconds(try AnyLoopTimer.intervalNanoseconds(interval))
        _ = try AnyLoopTimer.toleranceNanoseconds(tolerance)
        self.tolerance = tolerance
        self.clock = clock
        self.loop = loop ?? (clock as? ManualClock)?.loop
        self.mode = mode
    }

    /// An iterator with a timer of its own, scheduled now.
    public func makeAsyncIterator() -> Iterator {
        Iterator(source: Result { () throws(TimerError) in try startSource() })
    }

    /// Schedules the timer for one iterator.
    private func startSource() throws(TimerError) -> TickSource<Clock> {
        let loop: TimerLoop
        if let given = self.loop {
            loop = given
        } else {
            loop = try SleepService.shared.loop()
        }
        return try TickSource(
            loop: loop, interval: interval, tolerance: tolerance, clock: clock, mode: mode)
    }

    /// Waits for the ticks of one timer.
    public struct Iterator: AsyncIteratorProtocol {
        /// The timer's ticks, or why the timer could not be scheduled.
        let source: Result<TickSource<Clock>, TimerError>

        /// The next tick, or `nil` once the iterating task is cancelled.
        ///
        /// - Throws: ``TimerError`` if the timer could not be scheduled (a
        ///   mode error, ``TimerError/notManual`` for a ``ManualClock``'s
        ///   ticks on a real loop, or the loop's thread could not start), if
        ///   its loop's run failed (see ``TimerLoop/failure``), or
        ///   ``TimerError/iteratorInUse`` if another task waits in a copy of
        ///   this iterator.
        nonisolated(nonsending)
        public mutating func next() async throws(TimerError) -> Tick? {
            try await source.get().next()
        }

        /// The next tick, waited for without leaving `actor`'s isolation.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(TimerError)
            -> Tick?
        {
            try await source.get().next()
        }
    }
}

@available(*, unavailable, message: "an iterator belongs to one task; iterate the sequence again instead")
extension TimerTicks.Iterator: Sendable {}

extension TimerTicks where Clock == MonotonicClock {
    /// Ticks every `interval` on the monotonic clock; see
    /// ``init(every:tolerance:clock:on:in:)``.
    ///
    /// - Throws: ``TimerError/invalidInterval(_:)``,
    ///   ``TimerError/negativeTolerance(_:)``.
    public init(
        every interval: Duration,
        tolerance: Duration = .zero,
        on loop: TimerLoop? = nil,
        in mode: LoopMode = .default
    ) throws(TimerError) {
        try self.init(
            every: interval, tolerance: tolerance, clock: MonotonicClock(), on: loop, in: mode)
    }
}

/// The timer behind one ``TimerTicks`` iterator and the tick it holds for the
/// consumer.
final class TickSource<Clock: TimerClock>: LoopWaiter {
    typealias Tick = TimerTicks<Clock>.Tick

    private struct State {
        /// The grid instant of the timer's next fire: where the grid stands
        /// (the timer's own next fire date is held at `Int64.max`
        /// nanoseconds when the next point lies beyond them, and the timer
        /// fires no more).
        var next: Clock.Instant
        var pending: Tick?
        var waiter: CheckedContinuation<Result<Tick?, TimerError>, Never>?
        /// The call of `next()` that `waiter` belongs to, by its number.
        var waitingCall: UInt64 = 0
        /// Numbers the calls of `next()` (from 1).
        var calls: UInt64 = 0
        var finished = false
        var failure: TimerError?
    }

    private let state: ThreadLocked<State>
    private let timer: LoopTimer<Clock>
    private let loop: TimerLoop
    private let interval: Duration

    init(loop: TimerLoop, interval: Duration, tolerance: Duration, clock: Clock, mode: LoopMode)
        throws(TimerError)
    {
        self.loop = loop
        self.interval = interval
        // The grid starts one interval from now, on the loop's reading of
        // the clock (its manual time, on a manual loop).
        let first = loop.now(clock) + interval
        state = ThreadLocked(State(next: first))
        let reference = WeakBox<Clock>()
        timer = try LoopTimer(fireAt: first, repeating: interval, tolerance: tolerance) { timer, missed in
            guard let source = reference.source else { return timer.invalidate() }
            source.fired(missed: missed)
        }
        reference.source = self
        try loop.register(self)
        do {
            try loop.add(timer, forMode: mode)
        } catch {
            loop.unregister(self)
            throw error
        }
    }

    deinit {
        timer.invalidate()
        loop.unregister(self)
    }

    /// A fire of the timer, `missed` grid points after the one it was due
    /// at: hand it to a waiting consumer, or merge it into the tick held
    /// for the next one. Called on the loop's thread, one fire at a time.
    private func fired(missed: UInt64) {
        let (tick, waiter) = state.withLock {
            state -> (Tick, CheckedContinuation<Result<Tick?, TimerError>, Never>?) in
            // The grid point it stands for, and the next one (instant
            // arithmetic saturates at the ends of Duration's range).
            let (skipped, overflow) = interval.attoseconds.multipliedReportingOverflow(by: Int128(missed))
            let timestamp = state.next + (overflow ? Duration(attoseconds: .max) : Duration(attoseconds: skipped))
            state.next = timestamp + interval
            let tick = Tick(timestamp: timestamp, missed: missed)
            guard !state.finished else { return (tick, nil) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (tick, waiter)
            }
            if let held = state.pending {
                state.pending = Tick(timestamp: tick.timestamp, missed: held.missed + 1 + tick.missed)
            } else {
                state.pending = tick
            }
            return (tick, nil)
        }
        waiter?.resume(returning: .success(tick))
    }

    /// The next tick, waited for on the caller's executor. From a job of
    /// the ticks' own loop (real or manual), the task prefers the loop while it
    /// waits, so that the loop's thread resumes it onto the loop with no hop
    /// (as ``Sleeper/sleepOnItsLoop(_:clock:until:tolerance:)`` does).
    nonisolated(nonsending)
    func next() async throws(TimerError) -> Tick? {
        if TimerLoop.executing === loop {
            return try await withTaskExecutorPreference(loop) { await waitForTick() }.get()
        }
        return try await waitForTick().get()
    }

    nonisolated(nonsending)
    private func waitForTick() async -> Result<Tick?, TimerError> {
        let call = state.withLock { state in
            state.calls += 1
            return state.calls
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<Tick?, TimerError>, Never>) in
                let ready: Result<Tick?, TimerError>? = state.withLock { state in
                    if let failure = state.failure { return .failure(failure) }
                    // A copy of the iterator, used by a second task while
                    // the first waits (copies share this source). The
                    // waiting call is left as it is.
                    if state.waiter != nil { return .failure(.iteratorInUse) }
                    // Before a held tick: a cancelled iteration has ended.
                    if state.finished || Task.isCancelled { return .success(nil) }
                    if let tick = state.pending {
                        state.pending = nil
                        return .success(tick)
                    }
                    state.waiter = continuation
                    state.waitingCall = call
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            // The iteration ends, unless the call cancelled is a copy's
            // that another call's wait turns away: that wait goes on.
            let othersWait = state.withLock { $0.waiter != nil && $0.waitingCall != call }
            if !othersWait { finish(nil) }
        }
    }

    /// The loop's run failed: the waiting `next()` and every later one throw.
    func loopFailed(_ error: TimerError) {
        finish(error)
    }

    /// Ends the ticks: no more, and the timer is invalidated; with `failure`,
    /// `next()` throws it from now on.
    private func finish(_ failure: TimerError?) {
        let waiter = state.withLock { state in
            state.finished = true
            if state.failure == nil { state.failure = failure }
            defer { state.waiter = nil }
            return state.waiter
        }
        timer.invalidate()
        waiter?.resume(returning: failure.map { .failure($0) } ?? .success(nil))
    }
}

/// The timer's weak way back to its source (the source owns the timer).
private final class WeakBox<Clock: TimerClock>: @unchecked Sendable {
    // Written once before the timer is scheduled, read by its action after.
    weak var source: TickSource<Clock>?
}
