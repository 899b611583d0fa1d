import CTimerCore
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The state of a ``QueueTimer``: its schedule on a loop, its lifecycle, the
/// fires not yet handed to its handler, and its handlers.
///
/// The C loop holds a reference to the core while a C timer of it is
/// scheduled (released by the loop's release handler), and so does each
/// block it puts on the queue; the ``QueueTimer`` the user holds owns it and
/// cancels it when it goes away.
///
/// Fires are counted on the timer's grid: `accounted` grid points have
/// fired, so the next is `start + accounted * interval`. Suspending takes
/// the C timer off the loop; resuming schedules it again at that next grid
/// point, which, if it has passed, fires at the loop's next pass with the
/// skipped points as its `missed` count. A fire of a C timer that is no
/// longer the armed one is ignored: its grid point is fired again by the
/// timer that replaced it, so none is lost or counted twice.
///
/// Every field is guarded by one lock. The C core is called under it (it
/// calls back without its own lock held, so the order is always this lock,
/// then the loop's); handlers and the queue are called outside it.
final class QueueTimerCore: @unchecked Sendable {
    typealias EventHandler = @Sendable (UInt64) -> Void
    typealias CancelHandler = @Sendable () -> Void

    enum Phase {
        case inactive
        case active
        case cancelled
    }

    /// When the timer fires: the grid's first point on `clock`, its period
    /// (0 for one fire) and the leeway, all in nanoseconds.
    struct Grid {
        var clock: ClockID
        var start: Int64
        var interval: Int64
        var leeway: Int64
    }

    struct State {
        var phase = Phase.inactive
        var suspensions = 0
        var grid: Grid?
        /// Grid points fired since the grid was set.
        var accounted: UInt64 = 0
        /// The scheduled C timer, 0 if none.
        var armed: tk_timer_id = 0
        /// Fires not yet handed to the event handler.
        var pending: UInt64 = 0
        /// A delivery block is on the queue or running the handler.
        var delivering = false
        var eventHandler: EventHandler?
        var cancelHandler: CancelHandler?

        var firing: Bool { phase == .active && suspensions == 0 }
    }

    let loop: TimerLoop
    let queue: DispatchQueue
    private let state = ThreadLocked(State())

    init(loop: TimerLoop, queue: DispatchQueue) {
        self.loop = loop
        self.queue = queue
    }

    // MARK: Lifecycle

    // A handler replaced or dropped is let go of with no lock held: it may
    // hold the last reference to an object whose deinit cancels this timer,
    // which takes the same lock.

    func setEventHandler(_ handler: EventHandler?) {
        let (deliver, old) = state.withLock { state -> (Bool, EventHandler?) in
            guard state.phase != .cancelled else { return (false, nil) }
            let old = state.eventHandler
            state.eventHandler = handler
            return (startDelivery(&state), old)
        }
        _ = old
        if deliver { dispatchDelivery() }
    }

    func setCancelHandler(_ handler: CancelHandler?) {
        let old = state.withLock { state -> CancelHandler? in
            guard state.phase != .cancelled else { return nil }
            defer { state.cancelHandler = handler }
            return state.cancelHandler
        }
        _ = old
    }

    /// Sets the grid; fires counted for the old one are dropped.
    func schedule(_ grid: Grid) throws(TimerError) {
        try state.withLock { (state) throws(TimerError) in
            guard state.phase != .cancelled else { throw .cancelled }
            let old = state.armed
            if state.firing {
                // The new timer first, so that a failure leaves the old one.
                state.armed = try arm(grid, accounted: 0)
                disarm(old)
            }
            state.grid = grid
            state.accounted = 0
            state.pending = 0
        }
    }

    /// Returns false if the timer was active already or cancelled.
    @discardableResult
    func activate() throws(TimerError) -> Bool {
        try state.withLock { (state) throws(TimerError) in
            guard state.phase == .inactive else { return false }
            if state.suspensions == 0 { try armIfScheduled(&state) }
            state.phase = .active
            return true
        }
    }

    func suspend() {
        state.withLock { state in
            guard state.phase != .cancelled else { return }
            state.suspensions += 1
            if state.suspensions == 1 {
                disarm(state.armed)
                state.armed = 0
            }
        }
    }

    func resume() throws(TimerError) {
        let deliver = try state.withLock { (state) throws(TimerError) -> Bool in
            switch state.phase {
            case .cancelled:
                return false
            case .inactive where state.suspensions == 0:
                // As in Dispatch: resuming a timer never activated activates it.
                try armIfScheduled(&state)
                state.phase = .active
                return false
            case .inactive:
                state.suspensions -= 1
                return false
            case .active:
                guard state.suspensions > 0 else { throw .unbalancedResume }
                if state.suspensions == 1 { try armIfScheduled(&state) }
                state.suspensions -= 1
                return startDelivery(&state)
            }
        }
        if deliver { dispatchDelivery() }
    }

    /// Cancels the timer; returns false if it was cancelled already.
    @discardableResult
    func cancel() -> Bool {
        let (cancelled, handler, eventHandler) = state.withLock {
            state -> (Bool, CancelHandler?, EventHandler?) in
            guard state.phase != .cancelled else { return (false, nil, nil) }
            state.phase = .cancelled
            disarm(state.armed)
            state.armed = 0
            state.pending = 0
            // Let go of after the lock (see setEventHandler).
            let eventHandler = state.eventHandler
            state.eventHandler = nil
            // A delivery under way runs the cancel handler once it is done.
            if state.delivering { return (true, nil, eventHandler) }
            defer { state.cancelHandler = nil }
            return (true, state.cancelHandler, eventHandler)
        }
        _ = eventHandler
        if let handler { queue.async(execute: handler) }
        return cancelled
    }

    var isCancelled: Bool { state.withLock { $0.phase == .cancelled } }

    /// The next fire's deadline, if a C timer is armed on `clock`.
    func nextDeadline(on clock: ClockID) -> Int64? {
        state.withLock { state in
            guard state.armed != 0, state.grid?.clock == clock else { return nil }
            return loop.timerInfo(state.armed)?.deadline_ns
        }
    }

    // MARK: The loop's side

    private func armIfScheduled(_ state: inout State) throws(TimerError) {
        guard let grid = state.grid, state.armed == 0 else { return }
        state.armed = try arm(grid, accounted: state.accounted)
    }

    /// Schedules a C timer for the grid's next point after `accounted`
    /// fired ones; returns its handle, or 0 if the grid has no such point
    /// (a one-shot that fired, or a point past the end of time).
    private func arm(_ grid: Grid, accounted: UInt64) throws(TimerError) -> tk_timer_id {
        if grid.interval == 0 && accounted > 0 { return 0 }
        // Exact: a grid that started near the beginning of time can have
        // more than Int64.max points behind it and its next still ahead
        // (the product is below 2^127, the sum within Int128).
        let next = Int128(grid.start) + Int128(grid.interval) * Int128(accounted)
        guard let deadline = Int64(exactly: next) else { return 0 }
        if loop.hasFailed, let failure = loop.failure { throw failure }
        var spec = tk_timer_spec(
            clock: grid.clock.rawClock, delay_ns: 0, deadline_ns: deadline,
            interval_ns: grid.interval, leeway_ns: grid.leeway, modes: TK_MODES_ALL,
            flags: UInt32(TK_TIMER_ABSOLUTE))
        var id: tk_timer_id = 0
        // The loop's reference, released by the loop's release handler.
        let context = Unmanaged.passRetained(self)
        let result = tk_loop_schedule(
            loop.handle, &spec,
            { _, id, missed, context in
                // The loop holds its reference until this returns.
                Unmanaged<QueueTimerCore>.fromOpaque(context!).takeUnretainedValue()
                    .fired(id, missed)
            },
            context.toOpaque(), &id)
        if result < 0 {
            context.release()
            _ = try TimerError.check(result, "tk_loop_schedule")
        }
        return id
    }

    private func disarm(_ id: tk_timer_id) {
        guard id != 0 else { return }
        // -ENOENT: a one-shot that fired meanwhile; nothing is left to cancel.
        let result = tk_loop_cancel(loop.handle, id)
        if result != -ENOENT { SystemError.expectSuccess(result, "tk_loop_cancel") }
    }

    /// On the loop's thread: the C timer `id` fired, `missed` grid points late.
    private func fired(_ id: tk_timer_id, _ missed: UInt64) {
        let deliver = state.withLock { state -> Bool in
            guard state.armed == id, state.phase == .active else { return false }
            let (count, overflow) = missed.addingReportingOverflow(1)
            let fires = overflow ? UInt64.max : count
            state.accounted = state.accounted.addingSaturating(fires)
            state.pending = state.pending.addingSaturating(fires)
            // A one-shot C timer is done once this returns.
            if state.grid?.interval == 0 { state.armed = 0 }
            return startDelivery(&state)
        }
        if deliver { dispatchDelivery() }
    }

    // MARK: The queue's side

    /// Whether a delivery must be put on the queue now (and if so, marks it
    /// under way).
    private func startDelivery(_ state: inout State) -> Bool {
        guard state.firing, state.pending > 0, state.eventHandler != nil,
            !state.delivering
        else { return false }
        state.delivering = true
        return true
    }

    private func dispatchDelivery() {
        queue.async { self.deliver() }
    }

    /// On the queue: hands the pending fires to the handler, then either
    /// puts the next delivery on the queue (fires came meanwhile), or runs
    /// the cancel handler (the timer was cancelled meanwhile), or ends.
    private func deliver() {
        let call = state.withLock { state -> (EventHandler, UInt64)? in
            guard state.firing, state.pending > 0, let handler = state.eventHandler else {
                return nil
            }
            defer { state.pending = 0 }
            return (handler, state.pending)
        }
        if let (handler, fires) = call { handler(fires) }
        let (again, cancelHandler) = state.withLock { state -> (Bool, CancelHandler?) in
            state.delivering = false
            if state.phase == .cancelled {
                defer { state.cancelHandler = nil }
                return (false, state.cancelHandler)
            }
            return (startDelivery(&state), nil)
        }
        if again { dispatchDelivery() }
        cancelHandler?()
    }
}

extension UInt64 {
    fileprivate func addingSaturating(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
