import CTimerCore

/// A clock that tells server time, carried forward on the boot clock, so that
/// changing the device's wall clock cannot cheat it.
///
/// Sync it once with a server; from then on
/// `now = server time at the sync + (boot clock now − boot clock at the sync)`.
/// The boot clock (`CLOCK_BOOTTIME`) cannot be set by the user and keeps
/// counting while the machine is suspended, so the result stays right when the
/// wall clock is set back an hour, and across a suspend. Before any sync the
/// clock falls back to the wall clock and says so (``TrustedTime/source``).
///
/// ```swift
/// let clock = TrustedClock()
/// try clock.sync(sntpServer: "192.0.2.10")                  // or sync(with: TimeSample(...))
/// let now = clock.now                                       // TrustedTime
/// print(now, now.errorBound!)                               // "2026-...Z ±0.000210s (synced)"
/// try await clock.sleep(until: saleStart)                   // a server-time deadline
/// try clock.save(to: statePath)                             // survives a restart of the process
/// ```
///
/// **Samples.** ``sync(with:)`` takes a ``TimeSample`` (server time plus the
/// boot-clock instants around the request); the server time is placed at the
/// middle of the round trip (Cristian's algorithm). The clock keeps the most
/// recent samples (``Configuration/maximumSamples``) and uses the one with the
/// smallest error bound — the smallest round trip, with an older sample's
/// bound grown by the drift allowance for the time since it was taken.
///
/// **Error bound.** A reading's ``TrustedTime/errorBound`` is the sample's
/// bound (half its round trip, half the server's resolution, the server's own
/// uncertainty) plus ``Configuration/driftPartsPerMillion`` of the boot-clock
/// time since the sample: the boot clock's rate may be off by that much.
///
/// **Wall-clock changes.** The clock watches `wall − trusted`. When it moves by
/// more than ``Configuration/wallClockChangeThreshold`` since it was last
/// accepted, a ``WallClockChange`` is raised: to the handler set with
/// ``onWallClockChange(_:)`` and to every ``wallClockChanges()`` stream. It is
/// checked at each sync, by ``checkWallClock()``, and — at once when the
/// kernel reports a step — by ``monitorWallClock(on:checkingEvery:)``. On
/// Linux the wall clock and the boot clock run at the same rate (NTP's
/// frequency corrections apply to both), so the difference moves only when
/// the wall clock is stepped; no drift allowance is needed there. The first
/// sync reports a wall clock that disagrees with the server by more than the
/// threshold (plus the sample's error bound).
///
/// **Refreshing.** ``refreshReason`` (and ``needsSync``) says when to sync
/// again, by ``RefreshPolicy``: never synced, a saved state from another boot,
/// a sync too old, an error bound too large, or a wall-clock change since the
/// last sync (the "force a refresh when the difference changed a lot" policy).
///
/// **Persistence.** ``save(to:)`` and ``restore(from:)`` keep the samples
/// across a restart of the process. After a reboot the boot clock starts
/// again, so a state saved in another boot is not used, and the clock says it
/// needs a sync.
///
/// Thread safety: every member may be used from any thread; a sync and a read
/// never race (one lock guards the state; readings are taken outside it).
public final class TrustedClock: Clock, Sendable {
    /// A reading, or a deadline, in server time.
    public typealias Instant = TrustedTime

    /// The clock's settings.
    public struct Configuration: Sendable, Hashable {
        /// How far the boot clock's rate may be off, in parts per million: the
        /// error bound grows by this fraction of the time since the sample.
        /// 50 ppm (4.3 s a day) covers an ordinary undisciplined crystal; a
        /// machine kept in sync by NTP does far better.
        public var driftPartsPerMillion: Int64
        /// How many recent samples are kept (at least 1).
        public var maximumSamples: Int
        /// How far `wall − trusted` may move before a ``WallClockChange`` is
        /// raised.
        public var wallClockChangeThreshold: Duration
        /// When ``TrustedClock/refreshReason`` asks for a new sync.
        public var refreshPolicy: RefreshPolicy

        /// Settings; the defaults are 50 ppm, 8 samples, 1 s, and the default
        /// ``RefreshPolicy``.
        public init(
            driftPartsPerMillion: Int64 = 50,
            maximumSamples: Int = 8,
            wallClockChangeThreshold: Duration = .seconds(1),
            refreshPolicy: RefreshPolicy = RefreshPolicy()
        ) {
            self.driftPartsPerMillion = driftPartsPerMillion
            self.maximumSamples = maximumSamples
            self.wallClockChangeThreshold = wallClockChangeThreshold
            self.refreshPolicy = refreshPolicy
        }
    }

    /// When a synced clock should be synced again.
    public struct RefreshPolicy: Sendable, Hashable {
        /// Sync again once the last sync is this old (`nil`: age alone never
        /// asks for a sync).
        public var maximumAge: Duration?
        /// Sync again once the error bound exceeds this (`nil`: never).
        public var maximumErrorBound: Duration?
        /// Sync again after the wall clock was changed (a ``WallClockChange``
        /// raised by a check rather than by a sync).
        public var afterWallClockChange: Bool

        /// A policy; by default: after an hour, or after a wall-clock change.
        public init(
            maximumAge: Duration? = .seconds(3600),
            maximumErrorBound: Duration? = nil,
            afterWallClockChange: Bool = true
        ) {
            self.maximumAge = maximumAge
            self.maximumErrorBound = maximumErrorBound
            self.afterWallClockChange = afterWallClockChange
        }
    }

    /// Why the clock should be synced (again).
    public enum RefreshReason: Sendable, Hashable {
        /// No sample from this boot.
        case neverSynced
        /// The last restore found a state saved in another boot (a reboot
        /// since), and there has been no sync since.
        case savedStateFromAnotherBoot
        /// The last sync is older than ``RefreshPolicy/maximumAge``.
        case syncTooOld(age: Duration)
        /// The error bound exceeds ``RefreshPolicy/maximumErrorBound``.
        case errorBoundTooLarge(Duration)
        /// The wall clock was changed after the last sync.
        case wallClockChanged(WallClockChange)
    }

    /// The clock's settings.
    public let configuration: Configuration

    /// Where the clock's readings come from.
    public let readings: any ClockReadings

    let state: ThreadLocked<State>

    struct State {
        /// Recent samples of this boot, oldest first.
        var samples: [TimeSample] = []
        /// The sample in use.
        var best: TimeSample?
        /// When the newest sample's reply came (boot clock).
        var lastSyncAt: BootClock.Instant?
        /// The last restore found another boot's state and nothing synced since.
        var staleStateRejected = false
        /// `wall − trusted` as last accepted, once synced.
        var acceptedOffset: Duration?
        /// Before any sync: `wall − boot` as last accepted.
        var unsyncedBaseline: Duration?
        /// A wall-clock change seen by a check since the last sync.
        var pendingChange: WallClockChange?
        var handler: (@Sendable (WallClockChange) -> Void)?
        var streams: [UInt64: AsyncStream<WallClockChange>.Continuation] = [:]
        var nextStreamID: UInt64 = 0
    }

    /// A clock with no sample yet, reading `readings` (the machine's clocks by
    /// default; tests pass their own).
    public init(
        configuration: Configuration = Configuration(),
        readings: any ClockReadings = SystemClockReadings()
    ) {
        var configuration = configuration
        configuration.maximumSamples = max(1, configuration.maximumSamples)
        configuration.driftPartsPerMillion = max(0, configuration.driftPartsPerMillion)
        self.configuration = configuration
        self.readings = readings
        self.state = ThreadLocked(State())
    }

    // MARK: Reading

    /// The current time: server time if synced in this boot, else the wall
    /// clock (``TrustedTime/Source/wallClockFallback``).
    ///
    /// - Complexity: O(1): one boot-clock read and a lock.
    public var now: TrustedTime {
        reading().time
    }

    /// One nanosecond.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Whether the clock has a sample from this boot.
    public var isSynced: Bool {
        state.withLock { $0.best != nil }
    }

    /// The boot-clock instant of the newest sample's reply, if any.
    public var lastSync: BootClock.Instant? {
        state.withLock { $0.lastSyncAt }
    }

    /// Boot-clock time since the newest sample's reply (so it counts time
    /// suspended), if any.
    public var timeSinceSync: Duration? {
        let boot = readings.boot
        return state.withLock { $0.lastSyncAt.map { boot - $0 } }
    }

    /// The samples kept, oldest first.
    public var samples: [TimeSample] {
        state.withLock { $0.samples }
    }

    /// The sample in use: the one with the smallest error bound.
    public var bestSample: TimeSample? {
        state.withLock { $0.best }
    }

    /// `wall − trusted` now: how far the wall clock is ahead of server time
    /// (negative: behind); `nil` before a sync.
    public var wallClockOffset: Duration? {
        let boot = readings.boot
        let wall = readings.wall
        guard let best = state.withLock({ $0.best }) else { return nil }
        return wall - time(at: boot, from: best).sinceEpoch
    }

    /// Why the clock should be synced now, by the configured
    /// ``RefreshPolicy``; `nil` if it need not be.
    public var refreshReason: RefreshReason? {
        let boot = readings.boot
        let policy = configuration.refreshPolicy
        return state.withLock { state -> RefreshReason? in
            guard let best = state.best else {
                return state.staleStateRejected ? .savedStateFromAnotherBoot : .neverSynced
            }
            if policy.afterWallClockChange, let change = state.pendingChange {
                return .wallClockChanged(change)
            }
            if let maximumAge = policy.maximumAge, let last = state.lastSyncAt,
                boot - last > maximumAge
            {
                return .syncTooOld(age: boot - last)
            }
            if let maximumError = policy.maximumErrorBound,
                let error = time(at: boot, from: best).errorBound, error > maximumError
            {
                return .errorBoundTooLarge(error)
            }
            return nil
        }
    }

    /// Whether the clock should be synced: ``refreshReason`` is not `nil`.
    public var needsSync: Bool { refreshReason != nil }

    /// The current time and the boot-clock reading it was derived from.
    func reading() -> (time: TrustedTime, boot: BootClock.Instant) {
        let boot = readings.boot
        if let best = state.withLock({ $0.best }) {
            return (time(at: boot, from: best), boot)
        }
        return (TrustedTime(sinceEpoch: readings.wall, errorBound: nil, source: .wallClockFallback), boot)
    }

    /// Server time at the boot-clock instant `boot`, from `sample`.
    func time(at boot: BootClock.Instant, from sample: TimeSample) -> TrustedTime {
        let elapsed = boot - sample.midpoint
        return TrustedTime(
            sinceEpoch: sample.serverTimeAtMidpoint + elapsed,
            errorBound: sample.errorBound + driftAllowance(elapsed),
            source: .synced(since: sample.receivedAt))
    }

    /// ``Configuration/driftPartsPerMillion`` of `elapsed` (either sign),
    /// rounded up, saturating.
    func driftAllowance(_ elapsed: Duration) -> Duration {
        let nanoseconds = elapsed.saturatingNanoseconds.magnitude
        let ppm = UInt64(configuration.driftPartsPerMillion)
        let (whole, overflow) = (nanoseconds / 1_000_000).multipliedReportingOverflow(by: ppm)
        if overflow { return .nanoseconds(Int64.max) }
        let part = ((nanoseconds % 1_000_000) * ppm + 999_999) / 1_000_000
        let (total, overflow2) = whole.addingReportingOverflow(part)
        if overflow2 || total > UInt64(Int64.max) { return .nanoseconds(Int64.max) }
        return .nanoseconds(Int64(total))
    }

    // MARK: Sleeping

    /// Suspends until the clock reads `deadline` (server time), at most
    /// `tolerance` later: sleeps on the boot clock for the time left, then
    /// checks again, so a sync during the sleep that moves server time is
    /// followed. Never returns before ``now`` reaches `deadline`.
    ///
    /// - Throws: `CancellationError` if the task is cancelled first;
    ///   ``TimerError`` if TimerKit's loop cannot be started.
    public func sleep(until deadline: TrustedTime, tolerance: Duration? = nil) async throws {
        while true {
            let (now, boot) = reading()
            let left = now.duration(to: deadline)
            if left <= .zero { return }
            try await readings.sleep(until: boot + left, tolerance: tolerance)
        }
    }

    // MARK: Syncing

    /// Adds a sample and returns the time now.
    ///
    /// The sample joins the recent ones (the oldest leaves once there are
    /// ``Configuration/maximumSamples``), and the one with the smallest error
    /// bound is used from now on. A sync ends a pending wall-clock change and
    /// a rejected saved state (``refreshReason``), and checks the wall clock
    /// (cause ``WallClockChange/Cause/sync``).
    ///
    /// A sync may move the clock by up to the two samples' error bounds, in
    /// either direction.
    ///
    /// - Throws: ``TrustedTimeError/invalidSample(_:)`` for a sample that
    ///   cannot be right, or whose reply is later than the boot clock now.
    @discardableResult
    public func sync(with sample: TimeSample) throws(TrustedTimeError) -> TrustedTime {
        if let problem = sample.problem { throw .invalidSample(problem) }
        let boot = readings.boot
        guard sample.receivedAt <= boot else {
            throw .invalidSample("received after the boot clock's current reading")
        }
        let wall = readings.wall
        let (result, change, targets) = state.withLock {
            state -> (TrustedTime, WallClockChange?, Listeners) in
            let previous = state.best
            state.samples.append(sample)
            if state.samples.count > configuration.maximumSamples {
                state.samples.removeFirst(state.samples.count - configuration.maximumSamples)
            }
            state.best = bestSample(of: state.samples)
            state.lastSyncAt = max(state.lastSyncAt ?? sample.receivedAt, sample.receivedAt)
            state.staleStateRejected = false
            state.pendingChange = nil
            let change = evaluate(&state, cause: .sync, boot: boot, wall: wall, previous: previous)
            return (time(at: boot, from: state.best!), change, listeners(state, change))
        }
        deliver(change, to: targets)
        return result
    }

    /// Forgets every sample, the wall-clock baseline and any pending change;
    /// the clock falls back to the wall clock until the next sync. Handlers
    /// and streams stay.
    public func reset() {
        state.withLock { state in
            state.samples = []
            state.best = nil
            state.lastSyncAt = nil
            state.staleStateRejected = false
            state.acceptedOffset = nil
            state.unsyncedBaseline = nil
            state.pendingChange = nil
        }
    }

    /// The sample with the smallest error bound at the newest midpoint.
    func bestSample(of samples: [TimeSample]) -> TimeSample? {
        guard let newest = samples.map(\.midpoint).max() else { return nil }
        return samples.min { a, b in
            time(at: newest, from: a).errorBound! < time(at: newest, from: b).errorBound!
        }
    }

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
    public func onWallClockChange(_ handler: (@Sendable (WallClockChange) -> Void)?) {
        state.withLock { $0.handler = handler }
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
    /// ``TimerLoop/onWallClockChange(_:)``); code that needs its own handler
    /// on the same loop should call ``checkWallClock()`` from it instead. The
    /// loop holds the clock weakly.
    ///
    /// - Throws: ``TimerError`` if the handler or the timer cannot be set.
    @discardableResult
    public func monitorWallClock(on loop: TimerLoop, checkingEvery interval: Duration? = nil)
        throws(TimerError) -> WallClockMonitor
    {
        let weakClock = WeakReference(self)
        try loop.onWallClockChange {
            weakClock.object?.check(cause: .clockStep)
        }
        var timer: LoopTimer?
        if let interval {
            do throws(TimerError) {
                timer = try loop.schedule(
                    after: interval, repeating: interval, tolerance: interval / 10, clock: .boot,
                    in: [.common]
                ) { timer, _ in
                    guard let clock = weakClock.object else { return timer.invalidate() }
                    clock.check(cause: .check)
                }
            } catch {
                try? loop.onWallClockChange(nil)
                throw error
            }
        }
        check(cause: .check)
        return WallClockMonitor(loop: loop, timer: timer)
    }

    /// Decides whether the wall clock moved; updates the accepted offset and
    /// the pending change. `previous` is the sample in use before a sync.
    func evaluate(
        _ state: inout State, cause: WallClockChange.Cause, boot: BootClock.Instant,
        wall: Duration, previous: TimeSample?
    ) -> WallClockChange? {
        let threshold = configuration.wallClockChangeThreshold
        guard let best = state.best else {
            let wallMinusBoot = wall - boot.offset
            guard let baseline = state.unsyncedBaseline else {
                state.unsyncedBaseline = wallMinusBoot
                return nil
            }
            let change = wallMinusBoot - baseline
            guard magnitude(change) > threshold else { return nil }
            state.unsyncedBaseline = wallMinusBoot
            return raise(
                &state, cause: cause, change: change, offset: nil,
                at: TrustedTime(sinceEpoch: wall, errorBound: nil, source: .wallClockFallback))
        }
        let current = time(at: boot, from: best)
        let offset = wall - current.sinceEpoch
        guard var accepted = state.acceptedOffset else {
            // The first synced look: the wall clock is expected to agree with
            // the server, to within the threshold and this reading's error.
            // Whatever it is, it is the offset from now on.
            state.acceptedOffset = offset
            guard magnitude(offset) > threshold + (current.errorBound ?? .zero) else { return nil }
            return raise(&state, cause: cause, change: offset, offset: offset, at: current)
        }
        if cause == .sync, let previous, previous != best {
            // The sample in use changed: server time moved by the difference
            // between the two samples; the wall clock did not move.
            let before = wall - time(at: boot, from: previous).sinceEpoch
            accepted += offset - before
            state.acceptedOffset = accepted
        }
        let change = offset - accepted
        guard magnitude(change) > threshold else { return nil }
        state.acceptedOffset = offset
        return raise(&state, cause: cause, change: change, offset: offset, at: current)
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

    private func listeners(_ state: State, _ change: WallClockChange?) -> Listeners {
        guard change != nil else { return (nil, []) }
        return (state.handler, Array(state.streams.values))
    }

    private func deliver(_ change: WallClockChange?, to listeners: Listeners) {
        guard let change else { return }
        listeners.handler?(change)
        for stream in listeners.streams { stream.yield(change) }
    }
}

/// `|duration|`.
func magnitude(_ duration: Duration) -> Duration {
    duration < .zero ? .zero - duration : duration
}

/// The wall clock moved against trusted time (or, before any sync, against
/// the boot clock): someone set it, or NTP stepped it.
public struct WallClockChange: Sendable, Hashable {
    /// What noticed it.
    public enum Cause: Sendable, Hashable {
        /// A sync: the wall clock disagrees with the new sample (at the first
        /// sync: with the server at all).
        case sync
        /// ``TrustedClock/checkWallClock()`` or a monitor's periodic check.
        case check
        /// The kernel reported a step of the wall clock (a monitor's loop).
        case clockStep
    }

    /// What noticed it.
    public var cause: Cause
    /// How far the wall clock moved: positive forward, negative back.
    public var change: Duration
    /// `wall − trusted` after the change; `nil` before any sync.
    public var offset: Duration?
    /// When it was noticed, in trusted time (the wall clock before any sync).
    public var detectedAt: TrustedTime

    /// A change.
    public init(cause: Cause, change: Duration, offset: Duration?, detectedAt: TrustedTime) {
        self.cause = cause
        self.change = change
        self.offset = offset
        self.detectedAt = detectedAt
    }

    /// Equal when every field is, including the reading's error bound and
    /// source.
    public static func == (lhs: WallClockChange, rhs: WallClockChange) -> Bool {
        lhs.cause == rhs.cause && lhs.change == rhs.change && lhs.offset == rhs.offset
            && lhs.detectedAt.sinceEpoch == rhs.detectedAt.sinceEpoch
            && lhs.detectedAt.errorBound == rhs.detectedAt.errorBound
            && lhs.detectedAt.source == rhs.detectedAt.source
    }

    /// Hashes the cause, the change and the offset.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(cause)
        hasher.combine(change)
        hasher.combine(offset)
    }
}

/// Watches the wall clock for a ``TrustedClock`` from a ``TimerLoop`` (see
/// ``TrustedClock/monitorWallClock(on:checkingEvery:)``).
public final class WallClockMonitor: Sendable {
    private let loop: TimerLoop
    private let timer: LoopTimer?

    init(loop: TimerLoop, timer: LoopTimer?) {
        self.loop = loop
        self.timer = timer
    }

    /// Stops watching: clears the loop's wall-clock-change handler and the
    /// periodic check.
    public func stop() {
        try? loop.onWallClockChange(nil)
        timer?.invalidate()
    }
}
