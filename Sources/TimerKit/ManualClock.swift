/// A clock for tests: time moves only when the test says so, and moving it
/// fires every due sleep and timer synchronously, in deadline order.
///
/// ```swift
/// import Testing
///
/// let clock = try ManualClock()
/// let countdown = Task { try await clock.sleep(for: .seconds(60)); return "done" }
/// await clock.waitForSleepers(1)          // the task is asleep
/// try clock.advance(by: .seconds(60))      // resumes it, no real waiting
/// #expect(try await countdown.value == "done")
/// ```
///
/// It is built on a manual ``TimerLoop`` (``loop``): timers scheduled on that
/// loop fire inside ``advance(by:)`` itself, on the calling thread, so code
/// built on ``LoopTimer`` is tested without any task scheduling at all. Its
/// instants are its own type, and a `LoopTimer<ManualClock>` added to
/// ``loop`` takes them as fire dates. A sleeping task is resumed inside
/// ``advance(by:)`` too; it then runs as soon as the concurrency runtime
/// schedules it. ``waitForSleepers(_:)`` waits for tasks to go to sleep
/// without polling or yielding loops.
///
/// Thread safety: all members may be used from any thread; calls of
/// ``advance(by:)`` from several threads take turns.
public final class ManualClock: TimerClock, Sendable {
    /// A reading of the manual clock: time since its zero.
    public typealias Instant = ClockInstant<ManualClock>

    /// The manual loop's monotonic clock, which the readings are.
    public static var clockID: ClockID { .monotonic }

    /// The manual loop behind the clock. Timers added to it fire during
    /// ``advance(by:)``, measured on its monotonic clock.
    public let loop: TimerLoop

    private struct Sleepers {
        var count = 0
        /// Each call of ``waitForSleepers(_:)`` under way, by its number.
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
    }

    /// A call of ``waitForSleepers(_:)``: about to suspend, suspended until
    /// enough sleeps wait, or cancelled before it suspended.
    private enum Waiter {
        case starting
        case waiting(count: Int, continuation: CheckedContinuation<Void, Never>)
        case cancelled

        var isCancelled: Bool {
            if case .cancelled = self { return true }
            return false
        }
    }

    private let sleepers = ThreadLocked(Sleepers())

    /// A clock reading `start`.
    ///
    /// - Throws: ``TimerError/system(_:)`` if the loop cannot be created.
    public init(start: Instant = Instant(offset: .zero)) throws(TimerError) {
        loop = try TimerLoop.manual(startingAt: start.offset)
    }

    /// The clock's current reading.
    public var now: Instant { loop.now(self) }

    /// One nanosecond.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Suspends until the clock is advanced to `deadline` (plus at most
    /// `tolerance`, shared with other sleeps as on a real clock). A deadline
    /// the clock has reached returns at once, as on a real clock; one past
    /// the end of the clock's range (`Int64.max` nanoseconds) never comes,
    /// even once the clock has stopped at that end. A negative
    /// tolerance counts as none, as the standard library's clocks take it;
    /// one that takes the deadline + tolerance to the end of the clock's
    /// range (`Int64.max` nanoseconds) leaves the sleep to a wake-up that
    /// something else brings (another timer's, or a run's end).
    ///
    /// It runs on the caller's executor: from an actor or a task on
    /// ``loop``, the sleep ends on the loop's thread with no hop, within the
    /// run that takes the clock there.
    ///
    /// - Throws: `CancellationError` if the task is cancelled first;
    ///   ``TimerError/system(_:)`` if the loop cannot take the sleep's timer.
    nonisolated(nonsending)
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        if deadline <= now {
            try Task.checkCancellation()
            return
        }
        let registered: @Sendable () -> Void = { [self] in changeSleepers(by: 1) }
        let settled: @Sendable () -> Void = { [self] in changeSleepers(by: -1) }
        if TimerLoop.executing === loop {
            return try await Sleeper.sleepOnItsLoop(
                loop, clock: .monotonic, until: deadline.deadlineNanoseconds, tolerance: tolerance,
                registered: registered, settled: settled)
        }
        try await Sleeper.sleep(
            on: loop, clock: .monotonic, until: deadline.deadlineNanoseconds, tolerance: tolerance,
            registered: registered, settled: settled)
    }

    /// Suspends until the clock is advanced `duration` past its reading now;
    /// see ``sleep(until:tolerance:)``. Like it, it runs on the caller's
    /// executor, so that from an actor or a task on ``loop`` the sleep ends
    /// on the loop's thread with no hop. (The standard library's generic
    /// paths, such as `Task.sleep(for:clock:)`, leave the caller's executor
    /// first, and read the clock after: a run that moves the clock on
    /// meanwhile is missed.)
    ///
    /// - Throws: `CancellationError` if the task is cancelled first;
    ///   ``TimerError/system(_:)`` if the loop cannot take the sleep's timer.
    nonisolated(nonsending)
    public func sleep(for duration: Duration, tolerance: Duration? = nil) async throws {
        try await sleep(until: now.advanced(by: duration), tolerance: tolerance)
    }

    /// Moves the clock forward by `duration`, resuming every sleep and firing
    /// every timer of ``loop`` that comes due, in deadline order, before it
    /// returns. Returns how many sleeps and timers it ended. Calls from
    /// several threads take turns. It moves as ``TimerLoop/advance(by:mode:)``
    /// does: by whole nanoseconds, further than `Int64.max` of them too.
    ///
    /// - Throws: ``TimerError/busy`` when called from a timer's action on the
    ///   clock's own loop, or while another thread runs ``loop``;
    ///   ``TimerError/system(_:)`` with ``Errno/invalidArgument`` for a
    ///   negative duration.
    @discardableResult
    public func advance(by duration: Duration) throws(TimerError) -> Int {
        try loop.advance(by: duration)
    }

    /// Moves the clock forward to `instant` (no-op if it is not later). Calls
    /// from several threads take turns, and none moves the clock past its
    /// `instant`. The clock reads whole nanoseconds: an instant between two
    /// takes it to the earlier one (before or after the clock's origin),
    /// short of a sleep or timer until that instant, which ends at the later
    /// one (never early).
    ///
    /// - Throws: what ``advance(by:)`` throws.
    @discardableResult
    public func advance(to instant: Instant) throws(TimerError) -> Int {
        try loop.advance(toMonotonic: instant.offset.nanosecondsRoundedDown)
    }

    /// Runs the clock's ``loop`` in `mode` until the clock reads `deadline`
    /// (the nanosecond before it, for one between two, as
    /// ``advance(to:)`` does), moving it there as ``advance(by:)`` does but
    /// in the run's mode, and ending with a pass there, as a real loop's run
    /// would (see
    /// ``TimerLoop/run(mode:until:)``): `clock.run(mode: .tracking, until:
    /// clock.now + .seconds(2))` plays a two-second drag. A run started from one of the
    /// loop's own callbacks runs nested, unless an advance called that
    /// callback (then it throws ``TimerError/busy``).
    ///
    /// The corresponding C function is `tk_loop_run`.
    ///
    /// - Throws: what ``TimerLoop/run(mode:until:)`` throws.
    @discardableResult
    public func run(mode: LoopMode = .default, until deadline: Instant) throws(TimerError)
        -> TimerLoop.RunResult
    {
        try loop.run(mode: mode, until: MonotonicClock.Instant(offset: deadline.offset))
    }

    /// How many sleeps on this clock (``sleep(until:tolerance:)``, and
    /// `Task.sleep` given this clock) are waiting for it to move. Sleeps
    /// through ``loop`` itself (``TimerLoop/sleep(until:tolerance:)``), ticks
    /// and timers are not counted.
    public var pendingSleeps: Int {
        sleepers.withLock { $0.count }
    }

    /// Returns once at least `count` sleeps are waiting for the clock (as
    /// ``pendingSleeps`` counts them): the way for a test to know that the
    /// tasks it started have gone to sleep. It also returns, at once, when
    /// the calling task is cancelled (a test's time limit, say), so check
    /// `Task.isCancelled` where that matters.
    public func waitForSleepers(_ count: Int) async {
        let number = sleepers.withLock { sleepers in
            defer { sleepers.nextWaiter += 1 }
            sleepers.waiters[sleepers.nextWaiter] = .starting
            return sleepers.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = sleepers.withLock { sleepers in
                    if sleepers.count < count && sleepers.waiters[number]?.isCancelled != true {
                        sleepers.waiters[number] = .waiting(count: count, continuation: continuation)
                        return false
                    }
                    sleepers.waiters[number] = nil
                    return true
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let cancelled = sleepers.withLock { sleepers -> CheckedContinuation<Void, Never>? in
                switch sleepers.waiters[number] {
                case .starting:
                    sleepers.waiters[number] = .cancelled
                case .waiting(_, let continuation):
                    sleepers.waiters[number] = nil
                    return continuation
                case .cancelled, nil:
                    break
                }
                return nil
            }
            cancelled?.resume()
        }
    }

    private func changeSleepers(by change: Int) {
        let ready = sleepers.withLock { sleepers in
            sleepers.count += change
            var ready: [(number: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
            for (number, waiter) in sleepers.waiters {
                if case .waiting(let count, let continuation) = waiter, count <= sleepers.count {
                    ready.append((number, continuation))
                }
            }
            for waiter in ready { sleepers.waiters[waiter.number] = nil }
            return ready
        }
        for waiter in ready { waiter.continuation.resume() }
    }
}
