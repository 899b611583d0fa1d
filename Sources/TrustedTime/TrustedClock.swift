import TimerKit

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
/// try clock.sync(sntpServer: "time.example.org")            // or sync(with: TimeSample(...))
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
/// bound grown by the drift allowance for the time since it was taken; of
/// two with the same bound, the one received first.
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
        /// machine kept in sync by NTP does far better. A negative rate is
        /// taken as 0; any other is accepted, up to `Int64.max`: the growth
        /// then saturates at `Int64.max` nanoseconds, added to the sample's
        /// own bound.
        public var driftPartsPerMillion: Int64
        /// How many recent samples are kept (at least 1). A state file
        /// (``TrustedClock/save(to:)``) holds up to 64 of them.
        public var maximumSamples: Int
        /// How far `wall − trusted` may move before a ``WallClockChange`` is
        /// raised (at least 0: a negative threshold is taken as 0).
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
        /// Told after every change of the sample in use (sync, restore,
        /// reset): what the package's countdowns re-plan on.
        var sampleObservers: [UInt64: @Sendable () -> Void] = [:]
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
        configuration.wallClockChangeThreshold = max(.zero, configuration.wallClockChangeThreshold)
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
        // The sync first, the clock after: a sync on another thread in
        // between cannot make the time since it negative.
        guard let last = state.withLock({ $0.lastSyncAt }) else { return nil }
        return readings.boot - last
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
    package func reading() -> (time: TrustedTime, boot: BootClock.Instant) {
        let boot = readings.boot
        if let best = state.withLock({ $0.best }) {
            return (time(at: boot, from: best), boot)
        }
        return (TrustedTime(sinceEpoch: readings.wall, errorBound: nil, source: .wallClockFallback), boot)
    }

    /// Server time at the boot-clock instant `boot`: from the sample in use,
    /// or the wall clock now, moved by the boot clock's time from now to
    /// `boot`, before any sync.
    package func time(atBoot boot: BootClock.Instant) -> TrustedTime {
        if let best = state.withLock({ $0.best }) { return time(at: boot, from: best) }
        let now = readings.boot
        return TrustedTime(
            sinceEpoch: readings.wall.addingSaturating(boot - now), errorBound: nil, source: .wallClockFallback)
    }

    /// Calls `observer` (on the thread that made the change) after every
    /// change of the samples the clock uses: a sync, a restore that puts
    /// another sample in use, a reset of a clock that had one.
    /// Returns a key for ``removeSampleObserver(_:)``.
    package func addSampleObserver(_ observer: @escaping @Sendable () -> Void) -> UInt64 {
        state.withLock { state in
            let key = state.nextStreamID
            state.nextStreamID += 1
            state.sampleObservers[key] = observer
            return key
        }
    }

    /// Stops calling an observer added with ``addSampleObserver(_:)``.
    package func removeSampleObserver(_ key: UInt64) {
        _ = state.withLock { $0.sampleObservers.removeValue(forKey: key) }
    }

    /// Tells the sample observers (no lock held).
    func samplesChanged() {
        for observer in state.withLock({ Array($0.sampleObservers.values) }) { observer() }
    }

    /// Server time at the boot-clock instant `boot`, from `sample`.
    func time(at boot: BootClock.Instant, from sample: TimeSample) -> TrustedTime {
        let elapsed = boot - sample.midpoint
        return TrustedTime(
            sinceEpoch: sample.serverTimeAtMidpoint.addingSaturating(elapsed),
            errorBound: sample.errorBound.addingSaturating(driftAllowance(elapsed)),
            source: .synced(since: sample.receivedAt))
    }

    /// ``Configuration/driftPartsPerMillion`` of `elapsed` (either sign),
    /// rounded up, saturating.
    func driftAllowance(_ elapsed: Duration) -> Duration {
        // Whole nanoseconds rounded up: a midpoint may fall on half of one.
        // A span past Int64.max ns allows as much as a reading holds.
        let span = magnitude(elapsed)
        guard span <= .nanoseconds(Int64.max) else { return .nanoseconds(Int64.max) }
        let nanoseconds = UInt64(span.nanosecondsRoundedUp)
        let ppm = UInt64(configuration.driftPartsPerMillion)
        let (whole, overflow) = (nanoseconds / 1_000_000).multipliedReportingOverflow(by: ppm)
        if overflow { return .nanoseconds(Int64.max) }
        // Below a million nanoseconds times ppm: a double-width product,
        // whose quotient by a million (below ppm) fits.
        let (quotient, remainder) = UInt64(1_000_000).dividingFullWidth(
            (nanoseconds % 1_000_000).multipliedFullWidth(by: ppm))
        let part = quotient + (remainder > 0 ? 1 : 0)
        let (total, overflow2) = whole.addingReportingOverflow(part)
        if overflow2 || total > UInt64(Int64.max) { return .nanoseconds(Int64.max) }
        return .nanoseconds(Int64(total))
    }

    // MARK: Sleeping

    /// Suspends until the clock reads `deadline` (server time), at most
    /// `tolerance` later: sleeps on the boot clock for the time left, and
    /// checks again when that sleep ends or the samples change (a sync, a
    /// restore, a reset), so a sync during the sleep that moves server time
    /// is followed at once, either way. Never returns before ``now`` reaches
    /// `deadline`. Before the first sync the clock reads the wall clock (see
    /// ``now``), whose steps change no samples: a step during the sleep is
    /// followed when the boot-clock sleep under way ends, so a step forward
    /// ends the sleep up to that much late.
    ///
    /// It runs on the caller's executor (`nonisolated(nonsending)`), and so
    /// do the boot-clock sleeps of its ``readings`` (each in a task of its
    /// own, started on that executor, which a change of the samples
    /// cancels): from an actor or a task on a `TimerLoop`, with
    /// ``LoopClockReadings`` of that loop (real or manual), or on a real
    /// loop with ``SystemClockReadings``, the sleep ends on the loop's
    /// thread with no hop. Readings whose
    /// `sleep(until:tolerance:)` is plain `async` leave the executor for it,
    /// and so does a sleep through `Clock`'s requirement (such as
    /// `Task.sleep(until:clock:)`).
    ///
    /// - Throws: `CancellationError` if the task is cancelled first;
    ///   `TimerError` if TimerKit's loop cannot be started.
    nonisolated(nonsending)
    public func sleep(until deadline: TrustedTime, tolerance: Duration? = nil) async throws {
        let interruption = SleepInterruption()
        let observer = addSampleObserver { interruption.interrupt() }
        defer { removeSampleObserver(observer) }
        while true {
            // Before the reading: a change after it ends the sleep below.
            interruption.rearm()
            let (now, boot) = reading()
            let left = now.duration(to: deadline)
            if left <= .zero { return }
            let readings = readings
            try await interruption.sleep {
                try await readings.sleep(until: boot + left, tolerance: tolerance)
            }
        }
    }

    // MARK: Syncing

    /// Adds a sample and returns the time now.
    ///
    /// The sample joins the recent ones (the one whose reply came first
    /// leaves once there are ``Configuration/maximumSamples``, whatever the
    /// order of the syncs), and the one with the smallest error
    /// bound is used from now on. A sync ends a pending wall-clock change and
    /// a rejected saved state (``refreshReason``), and checks the wall clock
    /// (cause ``WallClockChange/Cause/sync``).
    ///
    /// A sync may move the clock by up to the two samples' error bounds, in
    /// either direction.
    ///
    /// - Throws: ``TrustedTimeError/invalidSample(_:)`` for a sample that
    ///   cannot be right (received before it was sent, a negative
    ///   resolution, processing time or uncertainty, a server time outside
    ///   the years 1677 to 2262, which clock readings hold, also once half
    ///   its resolution is added, or an error bound longer than they hold),
    ///   or whose reply is later than the boot clock now. A server time
    ///   before 1970 is negative, and valid.
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
            // In the order of their replies, so that the oldest leaves first
            // whatever order the syncs came in (two threads may sync at
            // once): a sample older than every kept one, with no room left,
            // leaves at once.
            let place = state.samples.lastIndex { $0.receivedAt <= sample.receivedAt }.map { $0 + 1 } ?? 0
            state.samples.insert(sample, at: place)
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
        samplesChanged()
        return result
    }

    /// Forgets every sample, the wall-clock baseline and any pending change;
    /// the clock falls back to the wall clock until the next sync. Handlers
    /// and streams stay. (A `CountdownCenter` counting on this clock does
    /// not fall back: it goes on from where it stood until the next sync,
    /// so that a wall clock the user set meanwhile moves no countdown.)
    public func reset() {
        let hadSample = state.withLock { state in
            let hadSample = state.best != nil
            state.samples = []
            state.best = nil
            state.lastSyncAt = nil
            state.staleStateRejected = false
            state.acceptedOffset = nil
            state.unsyncedBaseline = nil
            state.pendingChange = nil
            return hadSample
        }
        // A clock with no sample in use had its time from the wall clock
        // already: its observers (a center on it) keep what they count from.
        if hadSample { samplesChanged() }
    }

    /// The sample with the smallest error bound at the newest midpoint; of
    /// equal ones, the one received first.
    func bestSample(of samples: [TimeSample]) -> TimeSample? {
        guard let newest = samples.map(\.midpoint).max() else { return nil }
        return samples.min { a, b in
            let (boundA, boundB) = (time(at: newest, from: a).errorBound!, time(at: newest, from: b).errorBound!)
            return boundA != boundB ? boundA < boundB : a.receivedAt < b.receivedAt
        }
    }
}
