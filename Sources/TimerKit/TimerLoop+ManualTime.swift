import CTimerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension TimerLoop {
    /// Moves a manual loop's clocks forward by `duration`, firing on the
    /// calling thread, in `mode`, every timer that comes due, exactly as a real
    /// loop would: in deadline order, each at the time it would have woken the
    /// loop (its fire date plus tolerance, shared with nearby timers), with
    /// ``now(_:)`` reading that time inside the callback. Timers scheduled by
    /// callbacks within the span fire too. Returns the number of callbacks run.
    ///
    /// A repeating timer fires at each point of its grid that the span
    /// crosses, as on a loop that keeps up with it (a real loop that falls
    /// behind fires once and counts the skipped fires): advancing a 1 ms
    /// timer, or a ``FrameTicker`` at 1,000 frames a second, by an hour runs
    /// its action 3,600,000 times, one call after another.
    ///
    /// A timer that its action makes due at once again (say, with
    /// `setFireDate` to the current time) fires at the next pass, at the same
    /// time. An advance makes at most 65 passes at one time; then it moves
    /// on to the next wake-up later than that time, or to the end of the
    /// span, as a real loop's time moves on while such a timer keeps it busy.
    ///
    /// A callback may move time itself with ``setManualTime(to:)``, as a
    /// test does to stand for the time the callback takes: what it moves
    /// the monotonic clock forward uses up that much of the span, and the
    /// advance ends where the monotonic clock reads its start + `duration`
    /// (or where the callback left it, if that is later), the other clocks
    /// moved no further than the span's steps took them.
    ///
    /// Threads that advance the same loop at once take turns: each call moves
    /// time by its own `duration` after the one before it has returned.
    /// The duration counts whole nanoseconds (a part of one is dropped), and
    /// every clock stops at its highest reading; a span longer than the C
    /// core's longest (`Int64.max` nanoseconds, about 292 years) moves in
    /// parts, within the call's turn.
    ///
    /// The corresponding C function is `tk_loop_advance`.
    ///
    /// - Throws: ``TimerError/notManual``; ``TimerError/busy`` when called
    ///   from one of the loop's own callbacks, or while another thread runs
    ///   the loop with ``run(mode:until:)``; ``TimerError/system(_:)`` with
    ///   ``Errno/invalidArgument`` for a negative duration, or with
    ///   ``Errno/noMemory`` as ``run(mode:until:)`` throws it (the span then
    ///   ends early, and actions may have run).
    @discardableResult
    public func advance(by duration: Duration, mode: LoopMode = .default) throws(TimerError) -> Int {
        // The C core moves the clocks by at most Int64.max ns a call, so a
        // longer span goes in parts. Past UInt64.max ns every clock has
        // reached its end from any reading, so a longer one moves no further.
        var left = UInt64(clamping: duration.attoseconds / 1_000_000_000)
        // Any negative duration, a part of a nanosecond too (which would
        // count as 0), is refused, before the mode is named.
        return try advance(mode: mode, refusing: duration < .zero) { _ in
            let span = Int64(clamping: left)
            left -= UInt64(span)
            return (span, left == 0)
        }
    }

    /// Moves a manual loop's time to `instant` of its monotonic clock, as
    /// ``advance(by:mode:)`` does (no-op if the loop is there already).
    /// Reading the time and moving it are one step: threads advancing at
    /// once cannot move it past `instant`.
    func advance(toMonotonic instant: Int64, mode: LoopMode = .default) throws(TimerError) -> Int {
        try advance(mode: mode) { now in
            guard instant > now else { return (0, true) }
            // Further than the longest span (from a time before 0): that
            // span first, then the rest.
            let (span, overflow) = instant.subtractingReportingOverflow(now)
            return overflow ? (.max, false) : (span, true)
        }
    }

    /// Advances by the span `step` computes from the loop's monotonic time,
    /// and again while it says that span was not the whole way, holding the
    /// turn throughout.
    private func advance(
        mode: LoopMode, refusing negative: Bool = false, _ step: (Int64) -> (span: Int64, whole: Bool)
    ) throws(TimerError) -> Int {
        guard isManual else { throw .notManual }
        // As the C core refuses a negative span: a refused advance names no mode.
        if negative { _ = try TimerError.check(-EINVAL, "tk_loop_advance") }
        let modes = try runModeSet(mode)
        return try advancing.take { () throws(TimerError) in
            var fired = 0
            while true {
                let (span, whole) = step(now(MonotonicClock()).nanoseconds)
                fired += Int(try TimerError.check(tk_loop_advance(handle, modes, span), "tk_loop_advance"))
                if whole { return fired }
            }
        }
    }

    /// Sets one of a manual loop's clocks, the one `instant` belongs to. The
    /// monotonic and boot clocks only move forward (moving only the boot
    /// clock models a system suspend); the wall clock may jump either way,
    /// which the next advance or run reports as a clock step. An instant
    /// between two nanoseconds sets the clock to the earlier one.
    ///
    /// It sets that clock alone, and fires nothing: to let time pass on
    /// every clock, as it does on a machine, use ``advance(by:mode:)``. A
    /// monotonic clock set forward alone reads ahead of the boot clock,
    /// which a machine's never does (Linux's boot clock is its monotonic
    /// clock plus the time spent suspended), so code on the boot clock
    /// (countdowns, cooldowns, a `TrustedClock`'s readings) does not see
    /// that time pass. It may be called from the loop's callbacks, also
    /// during an advance (see there).
    ///
    /// ```swift
    /// try loop.setManualTime(to: loop.now(.boot) + .seconds(3600))   // an hour asleep
    /// ```
    ///
    /// The corresponding C function is `tk_loop_set_manual_time`.
    ///
    /// - Throws: ``TimerError/notManual``; ``TimerError/system(_:)`` with
    ///   ``Errno/invalidArgument`` for a monotonic or boot instant earlier
    ///   than the clock's reading.
    public func setManualTime<Clock: TimerClock>(to instant: ClockInstant<Clock>) throws(TimerError) {
        _ = try TimerError.check(
            tk_loop_set_manual_time(handle, Clock.clockID.rawClock, instant.offset.nanosecondsRoundedDown),
            "tk_loop_set_manual_time")
    }
}

/// Turns for threads that advance a manual loop: one at a time, in the
/// order the mutex grants. A thread that asks while it holds the turn (a
/// callback of its own advance) is refused rather than deadlocked.
final class AdvanceTurn: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        SystemError.expectSuccess(-pthread_mutexattr_init(&attributes), "pthread_mutexattr_init")
        SystemError.expectSuccess(
            -pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK)),
            "pthread_mutexattr_settype")
        SystemError.expectSuccess(-pthread_mutex_init(mutex, &attributes), "pthread_mutex_init")
        SystemError.expectSuccess(-pthread_mutexattr_destroy(&attributes), "pthread_mutexattr_destroy")
    }

    deinit {
        SystemError.expectSuccess(-pthread_mutex_destroy(mutex), "pthread_mutex_destroy")
        mutex.deallocate()
    }

    /// Runs `body` holding the turn.
    ///
    /// - Throws: ``TimerError/busy`` if the calling thread holds it already.
    func take<Result>(_ body: () throws(TimerError) -> Result) throws(TimerError) -> Result {
        let locked = pthread_mutex_lock(mutex)
        if locked == EDEADLK { throw .busy }
        SystemError.expectSuccess(-locked, "pthread_mutex_lock")
        defer { SystemError.expectSuccess(-pthread_mutex_unlock(mutex), "pthread_mutex_unlock") }
        return try body()
    }
}
