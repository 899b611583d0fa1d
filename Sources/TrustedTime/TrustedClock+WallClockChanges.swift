import TimerKit

extension TrustedClock {
    // MARK: Wall-clock changes

    /// Compares the wall clock with trusted time now (cause
    /// ``WallClockChange/Cause/check``), raises a ``WallClockChange`` if it
    /// moved by more than the threshold, and returns it.
    ///
    /// Before any sync, the wall clock is compared with the boot clock
    /// instead: the first check only records where it stands.
    @discardableResult
    public func checkWallClock() -> WallClockChange? {
        check(cause: .check)
    }

    @discardableResult
    func check(cause: WallClockChange.Cause) -> WallClockChange? {
        let boot = readings.boot
        let wall = readings.wall
        let (change, targets) = state.withLock { state -> (WallClockChange?, Listeners) in
            let change = evaluate(&state, cause: cause, boot: boot, wall: wall, previous: nil)
            return (change, listeners(state, change))
        }
        deliver(change, to: targets)
        return change
    }

    /// Sets the function called with every ``WallClockChange`` (on the thread
    /// that detected it: a syncing thread, a checking thread, or the monitor's
    /// loop thread), replacing any earlier one; `nil` removes it.
    ///
    /// Once this returns, no call of the old handler starts, save one for a
    /// change that another thread had detected at that very moment.
    public func onWallClockChange(_ handler: (@Sendable (WallClockChange) -> Void)?) {
        // The old handler is let go of with no lock held: it may hold the
        // last reference to something whose deinit takes the clock's lock
        // (a countdown center on this clock removes its sample observer).
        let old = state.withLock { state in
            defer { state.handler = handler }
            return state.handler
        }
        _ = old
    }

    /// A new stream of every ``WallClockChange`` from now on (the 16 newest
    /// are kept for a slow consumer). Ends when the consumer's task is
    /// cancelled.
    public func wallClockChanges() -> AsyncStream<WallClockChange> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: WallClockChange.self, bufferingPolicy: .bufferingNewest(16))
        let id = state.withLock { state in
            let id = state.nextStreamID
            state.nextStreamID += 1
            state.streams[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    /// Watches the wall clock from `loop`: the loop's wall-clock-change
    /// handler (a `TFD_TIMER_CANCEL_ON_SET` timerfd in the C core) runs a
    /// check the moment the wall clock is stepped (cause
    /// ``WallClockChange/Cause/clockStep``), and, with `interval`, a repeating
    /// boot-clock timer also checks every `interval` (cause
    /// ``WallClockChange/Cause/check``). A first check is made now.
    ///
    /// This sets `loop`'s one wall-clock-change handler (see
    /// `TimerLoop/onWallClockChange(_:)`); code that needs its own handler
    /// on the same loop should call ``checkWallClock()`` from it instead. The
    /// loop holds the clock weakly.
    ///
    /// - Throws: `TimerError` if the timer or the handler cannot be set:
    ///   `TimerError.invalidInterval(_:)` for an interval below 1 ns, or
    ///   what `TimerLoop/onWallClockChange(_:)` and scheduling throw. The
    ///   loop is then as it was, its handler included.
    @discardableResult
    public func monitorWallClock(on loop: TimerLoop, checkingEvery interval: Duration? = nil)
        throws(TimerError) -> WallClockMonitor
    {
        let weakClock = WeakClock(self)
        // The timer first: it is the part that can refuse its settings, and
        // a failure then leaves the loop's handler as it was.
        var timer: LoopTimer<BootClock>?
        if let interval {
            timer = try loop.schedule(
                after: interval, repeating: interval, tolerance: interval / 10, clock: .boot,
                in: .common
            ) { timer, _ in
                guard let clock = weakClock.clock else { return timer.invalidate() }
                clock.check(cause: .check)
            }
        }
        let setting: WallClockChangeHandlerSetting
        do throws(TimerError) {
            setting = try loop.setWallClockChangeHandler {
                weakClock.clock?.check(cause: .clockStep)
            }
        } catch {
            timer?.invalidate()
            throw error
        }
        check(cause: .check)
        return WallClockMonitor(loop: loop, timer: timer, handler: setting)
    }

    /// Decides whether the wall clock moved; updates the accepted offset and
    /// the pending change. `previous` is the sample in use before a sync.
    func evaluate(
        _ state: inout State, cause: WallClockChange.Cause, boot: BootClock.Instant,
        wall: Duration, previous: TimeSample?
    ) -> WallClockChange? {
        let threshold = configuration.wallClockChangeThreshold
        guard let best = state.best else {
            let wallMinusBoot = wall.subtractingSaturating(boot.offset)
            guard let baseline = state.unsyncedBaseline else {
                state.unsyncedBaseline = wallMinusBoot
                return nil
            }
            let change = wallMinusBoot.subtractingSaturating(baseline)
            guard magnitude(change) > threshold else { return nil }
            state.unsyncedBaseline = wallMinusBoot
            return raise(
                &state, cause: cause, change: change, offset: nil,
                at: TrustedTime(sinceEpoch: wall, errorBound: nil, source: .wallClockFallback))
        }
        let current = time(at: boot, from: best)
        let offset = wall.subtractingSaturating(current.sinceEpoch)
        guard var accepted = state.acceptedOffset else {
            // The first synced look: the wall clock is expected to agree with
            // the server, to within the threshold and this reading's error.
            // Whatever it is, it is the offset from now on.
            state.acceptedOffset = offset
            guard magnitude(offset) > threshold.addingSaturating(current.errorBound ?? .zero) else { return nil }
            return raise(&state, cause: cause, change: offset, offset: offset, at: current)
        }
        if cause == .sync {
            // If the sample in use changed, server time moved by the
            // difference between the two samples; the wall clock did not move.
            accepted = movedOffset(accepted, from: previous, to: best, at: boot)
            state.acceptedOffset = accepted
        }
        let change = offset.subtractingSaturating(accepted)
        guard magnitude(change) > threshold else { return nil }
        state.acceptedOffset = offset
        return raise(&state, cause: cause, change: change, offset: offset, at: current)
    }

    /// `wall − trusted` accepted against the sample `old`, made the same
    /// against the sample `new` (after a sync or a restore that put `new` in
    /// use): the difference between the server times the two give, at any
    /// one boot-clock instant, added to it.
    func movedOffset(
        _ accepted: Duration, from old: TimeSample?, to new: TimeSample?, at boot: BootClock.Instant
    ) -> Duration {
        guard let old, let new, old != new else { return accepted }
        let moved = time(at: boot, from: old).sinceEpoch.subtractingSaturating(time(at: boot, from: new).sinceEpoch)
        return accepted.addingSaturating(moved)
    }

    private func raise(
        _ state: inout State, cause: WallClockChange.Cause, change: Duration, offset: Duration?,
        at time: TrustedTime
    ) -> WallClockChange {
        let event = WallClockChange(cause: cause, change: change, offset: offset, detectedAt: time)
        // A change found by a sync is answered by that sync.
        if cause != .sync { state.pendingChange = event }
        return event
    }

    typealias Listeners = (
        handler: (@Sendable (WallClockChange) -> Void)?,
        streams: [AsyncStream<WallClockChange>.Continuation]
    )

    func listeners(_ state: State, _ change: WallClockChange?) -> Listeners {
        guard change != nil else { return (nil, []) }
        return (state.handler, Array(state.streams.values))
    }

    func deliver(_ change: WallClockChange?, to listeners: Listeners) {
        guard let change else { return }
        listeners.handler?(change)
        for stream in listeners.streams { stream.yield(change) }
    }
}

/// `|duration|`, saturating.
func magnitude(_ duration: Duration) -> Duration {
    duration < .zero ? Duration.zero.subtractingSaturating(duration) : duration
}

/// A clock held weakly by the loop that monitors it.
private final class WeakClock: Sendable {
    nonisolated(unsafe) weak var clock: TrustedClock?
    init(_ clock: TrustedClock) { self.clock = clock }
}
