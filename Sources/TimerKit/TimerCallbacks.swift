import CTimerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Timers that cost no object each: one handler for them all, each timer a
/// ``CallbackTimer`` value naming it in the loop's C table.
///
/// A ``LoopTimer`` is an object per timer: simple to hold and to change, but
/// at a million pending timers, scheduling one and cancelling another at
/// random goes through that object, which is rarely in the cache. A program
/// that keeps that many (an idle timeout per connection, a retry per
/// request) and already has an object of its own per item can schedule
/// through one `TimerCallbacks` instead: a schedule or cancel costs what the
/// C core's does, plus a reference count on the handler.
///
/// ```swift
/// import Synchronization
///
/// final class Connections: TimerCallbackHandler {
///     let idle = Mutex<[CallbackTimer: Connection]>([:])
///     func timerFired(_ timer: CallbackTimer, missed: UInt64) {
///         idle.withLock { $0.removeValue(forKey: timer) }?.close()
///     }
/// }
/// let connections = Connections()
/// let timeouts = loop.callbacks(connections)
/// // Scheduled under the table's lock, so that the handler finds the entry.
/// let timer = try connections.idle.withLock { idle in
///     let timer = try timeouts.schedule(after: .seconds(30), tolerance: .seconds(1))
///     idle[timer] = connection
///     return timer
/// }
/// // On activity: cancel (false if it fired), and schedule again.
/// if timeouts.cancel(timer) { _ = connections.idle.withLock { $0.removeValue(forKey: timer) } }
/// ```
///
/// The loop keeps the handler alive while any of its timers is scheduled.
/// The timers live as long as the loop: letting go of the loop (which this
/// object holds) ends them unfired. Timers are one-shot unless given an
/// interval; a one-shot is done once it has fired.
///
/// Thread safety: every method may be called from any thread; the handler
/// is called on the loop's thread.
public final class TimerCallbacks<Handler: TimerCallbackHandler>: Sendable {
    /// The loop the timers are scheduled on.
    public let loop: TimerLoop
    /// What the C loop calls, holding the handler: the loop's reference to
    /// it is what keeps the handler alive while timers are scheduled.
    private let target: HandlerTarget<Handler>

    /// Called when a timer fires.
    public var handler: Handler { target.handler }

    init(loop: TimerLoop, handler: Handler) {
        self.loop = loop
        self.target = HandlerTarget(handler, loop: loop.serial)
    }

    /// Schedules a timer on the monotonic clock, in `mode`: it fires
    /// `delay` from now (never earlier; at most `tolerance` later when the
    /// thread is free; at once for a delay of zero or less), then, if
    /// `interval` is given, every `interval` on the original grid, until
    /// cancelled.
    ///
    /// - Throws: ``TimerError/invalidInterval(_:)``,
    ///   ``TimerError/negativeTolerance(_:)``, a mode error, the failure of
    ///   the loop's thread, or ``TimerError/system(_:)`` if the core cannot
    ///   take the timer (for example out of memory). Nothing is scheduled
    ///   then.
    /// - Complexity: O(log n) in the loop's pending timers.
    @discardableResult
    public func schedule(
        after delay: Duration, repeating interval: Duration? = nil, tolerance: Duration = .zero,
        in mode: LoopMode = .default
    ) throws(TimerError) -> CallbackTimer {
        var intervalNanoseconds: Int64 = 0
        if let interval { intervalNanoseconds = try AnyLoopTimer.intervalNanoseconds(interval) }
        let leeway = try AnyLoopTimer.toleranceNanoseconds(tolerance)
        if loop.hasFailed, let failure = loop.failure { throw failure }
        let (modes, common) = TimerLoop.cModes(try loop.modeSet(mode))
        var spec = tk_timer_spec(
            clock: TK_CLOCK_MONOTONIC, delay_ns: max(0, delay.nanosecondsRoundedUp), deadline_ns: 0,
            interval_ns: intervalNanoseconds, leeway_ns: leeway, modes: modes,
            flags: common ? UInt32(TK_TIMER_COMMON) : 0)
        // The loop's reference, released by the loop's release handler or
        // handed back to cancel(_:).
        let context = Unmanaged.passRetained(target as CallbackTarget)
        var id: tk_timer_id = 0
        let result = tk_loop_schedule(
            loop.handle, &spec,
            { _, id, missed, context in
                // The loop holds its reference until this returns.
                Unmanaged<CallbackTarget>.fromOpaque(context!).takeUnretainedValue().fired(id, missed)
            },
            context.toOpaque(), &id)
        if result < 0 {
            context.release()
            _ = try TimerError.check(result, "tk_loop_schedule")
        }
        return CallbackTimer(id: id, loop: loop.serial)
    }

    /// Cancels `timer`: once this returns, no call for it starts (one
    /// running on the loop's thread finishes). Returns false if it was not
    /// scheduled: a one-shot that has fired, a timer cancelled already, or
    /// one of another loop (which is left as it is). Inside the handler's
    /// own call for a one-shot, the first cancel of it returns true (as
    /// `tk_loop_cancel` returns 0 there), although ``isScheduled(_:)`` is
    /// false: it ends a timer that was ending anyway. A timer of another
    /// `TimerCallbacks` of the same loop is cancelled too: the handle names
    /// a timer of the loop.
    ///
    /// - Complexity: O(log n) in the loop's pending timers.
    @discardableResult
    public func cancel(_ timer: CallbackTimer) -> Bool {
        // 1: the loop handed back its reference, released here. 0: a call
        // for it runs, and the release handler gets the reference after.
        guard timer.loop == loop.serial else { return false }
        var context: UnsafeMutableRawPointer?
        let result = tk_loop_cancel_take(loop.handle, timer.id, &context)
        if result == 1, let context {
            Unmanaged<AnyObject>.fromOpaque(context).release()
            return true
        }
        if result == 0 { return true }
        if result != -ENOENT { SystemError.expectSuccess(result, "tk_loop_cancel_take") }
        return false
    }

    /// Whether `timer` is scheduled: it will fire (again).
    public func isScheduled(_ timer: CallbackTimer) -> Bool {
        timer.loop == loop.serial && loop.timerInfo(timer.id) != nil
    }
}

/// What the C loop calls for a ``TimerCallbacks`` timer (its context): a
/// class without generics, so that one C function serves every handler
/// type. It has no state.
class CallbackTarget: @unchecked Sendable {
    func fired(_ id: tk_timer_id, _ missed: UInt64) {
        preconditionFailure("every CallbackTarget is a HandlerTarget")
    }
}

/// The ``CallbackTarget`` of one handler.
final class HandlerTarget<Handler: TimerCallbackHandler>: CallbackTarget, @unchecked Sendable {
    // @unchecked: one `let` of a Sendable type.
    let handler: Handler
    /// The loop's number, for the handles given to the handler.
    let loop: UInt64

    init(_ handler: Handler, loop: UInt64) {
        self.handler = handler
        self.loop = loop
    }

    override func fired(_ id: tk_timer_id, _ missed: UInt64) {
        handler.timerFired(CallbackTimer(id: id, loop: loop), missed: missed)
    }
}

extension TimerLoop {
    /// A way to schedule timers on this loop that all call `handler`, with
    /// no object per timer (see ``TimerCallbacks``).
    public func callbacks<Handler: TimerCallbackHandler>(_ handler: Handler) -> TimerCallbacks<Handler> {
        TimerCallbacks(loop: self, handler: handler)
    }
}
