import CTimerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Calls an action once per frame, on a fixed grid of a ``TimerLoop``'s
/// monotonic clock: what `CADisplayLink` is to a screen, for a game
/// server's tick, a render loop or a media pipeline.
///
/// ```swift
/// let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 60), in: [.common]) {
///     ticker, frame in
///     render(at: frame.targetTimestamp, skipped: frame.droppedFrames)
/// }
/// // ...
/// ticker.isPaused = true        // off screen: no frames, no wake-ups
/// ticker.invalidate()
/// ```
///
/// Frame *k* is due at *anchor + k × period*, where the anchor is when the
/// ticker started, or, after a change of its rate, the latest frame's
/// timestamp then (see ``setRate(_:)``), so frames never drift. They
/// never come early either: one absolute deadline of the loop's timerfd,
/// with no tolerance, drives them. When the loop wakes late, the action gets
/// the latest grid point that has passed; when an action runs past the next
/// grid point, the points it covered are skipped; while the loop runs none
/// of the ticker's modes, the points that pass get no frame either. Each
/// way the next frame's ``Frame/droppedFrames`` counts the grid points that
/// got no frame.
///
/// A ``FrameRateRange`` with more than one rate lets the ticker step its
/// rate down while frames are being dropped (a time in another mode among
/// them), and back up when the work allows (see ``FrameRateRange``).
///
/// The loop keeps the ticker alive until ``invalidate()``, and until then
/// the ticker keeps what its action captures: capture `[weak self]`, or use
/// ``init(on:rate:in:paused:target:action:)``, which holds its target weakly.
/// An invalidated ticker lets go of its action, as `CADisplayLink` lets go
/// of its target.
///
/// On a manual loop (``TimerLoop/manual(startingAt:)``) the frames follow
/// the manual time: advancing it delivers exactly the frames of the span.
///
/// Thread safety: every member may be used from any thread, and from the
/// ticker's own action. A change made while the action runs takes effect
/// when it returns. The action runs on the loop's thread, one frame at a
/// time: a nested run of the loop never re-enters it.
///
/// The corresponding C API is `tk_frame_ticker_*`.
public final class FrameTicker: @unchecked Sendable {
    /// One frame, as the action is told it. Times are readings of the loop's
    /// monotonic clock (the manual time, on a manual loop).
    public struct Frame: Sendable, Hashable {
        /// Frames delivered before this one.
        public var index: UInt64
        /// This frame's grid time. Never later than ``deliveredAt``.
        public var timestamp: MonotonicClock.Instant
        /// The next frame's grid time: what to render for (the clock's last
        /// instant, `Int64.max` nanoseconds, if that grid time lies past it).
        public var targetTimestamp: MonotonicClock.Instant
        /// The period in force: `targetTimestamp - timestamp`, but for a
        /// target held at the clock's last instant.
        public var duration: Duration
        /// Grid points skipped since the previous frame, because the loop
        /// woke late or the previous action ran past them. 0 on time.
        public var droppedFrames: UInt64
        /// When the action was called.
        public var deliveredAt: MonotonicClock.Instant

        init(_ frame: tk_frame) {
            index = frame.index
            timestamp = MonotonicClock.Instant(nanoseconds: frame.timestamp_ns)
            targetTimestamp = MonotonicClock.Instant(nanoseconds: frame.target_timestamp_ns)
            duration = .nanoseconds(frame.duration_ns)
            droppedFrames = frame.dropped_frames
            deliveredAt = MonotonicClock.Instant(nanoseconds: frame.now_ns)
        }
    }

    /// What the ticker runs each frame: the ticker and the frame.
    public typealias Action = @Sendable (FrameTicker, Frame) -> Void

    /// The loop the ticker runs on.
    public let loop: TimerLoop

    /// The C ticker and the action; both `nil` once invalidated. Every call
    /// into the C ticker holds the lock, so none can reach a ticker
    /// `invalidate()` has let go of; an invalidated ticker lets go of its
    /// action, and so of what it captures.
    private let held: ThreadLocked<Held>

    private struct Held {
        var ticker: OpaquePointer?
        var action: Action?
    }

    /// Creates a ticker on `loop` and starts it (unless `paused`): its first
    /// frame is due one period from now.
    ///
    /// - Parameters:
    ///   - loop: the loop whose thread runs the action.
    ///   - rate: the rates it may run at (``FrameRateRange/init(fixed:)``
    ///     for one).
    ///   - modes: the loop modes it delivers frames in; `[.common]` keeps a
    ///     display going while the loop runs in ``LoopMode/tracking``.
    ///   - paused: create it paused; set ``isPaused`` to start it.
    ///   - action: runs on the loop's thread, once per frame.
    /// - Throws: ``TimerError/invalidFrameRate(_:)``,
    ///   ``TimerError/noModes``, a mode error, or ``TimerError/system(_:)``
    ///   if the loop cannot take the ticker (for example out of memory).
    public init(
        on loop: TimerLoop,
        rate: FrameRateRange,
        in modes: [LoopMode] = [.default],
        paused: Bool = false,
        _ action: @escaping Action
    ) throws(TimerError) {
        self.loop = loop
        self.held = ThreadLocked(Held(ticker: nil, action: action))
        if loop.hasFailed, let failure = loop.failure { throw failure }
        let (cModes, common) = TimerLoop.cModes(try loop.modeSet(modes))
        var spec = tk_frame_ticker_spec(
            rate: rate.rawRange, modes: cModes,
            flags: (paused ? UInt32(TK_FRAME_PAUSED) : 0) | (common ? UInt32(TK_FRAME_COMMON) : 0))
        // The loop's reference, handed to its release handler when the C
        // ticker is freed (after tk_frame_ticker_destroy, or with the loop).
        let context = Unmanaged.passRetained(self)
        // Created under the lock, so that a first frame that comes before
        // this returns (and calls invalidate(), say) finds the handle.
        let result = held.withLock { held in
            tk_frame_ticker_create(
                loop.handle, &spec,
                { _, _, frame, context in
                    Unmanaged<FrameTicker>.fromOpaque(context!).takeUnretainedValue()
                        .deliver(frame!.pointee)
                },
                context.toOpaque(), &held.ticker)
        }
        if result < 0 {
            context.release()
            if result == -EINVAL { throw .invalidFrameRate(rate) }
            _ = try TimerError.check(result, "tk_frame_ticker_create")
        }
    }

    /// Creates a ticker whose action gets `target`, held weakly: the ticker
    /// never keeps its target alive, and invalidates itself at the first
    /// frame after the target is gone (a paused ticker has no frame, so
    /// invalidate it, or resume it, when its target goes). See
    /// ``init(on:rate:in:paused:_:)``.
    ///
    /// ```swift
    /// final class Renderer: Sendable {
    ///     init(loop: TimerLoop) throws {
    ///         _ = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 60), target: self) {
    ///             renderer, _, frame in renderer.draw(for: frame.targetTimestamp)
    ///         }
    ///     }
    ///     func draw(for time: MonotonicClock.Instant) {}
    /// }
    /// ```
    ///
    /// The action runs on the loop's thread with the target, so the target
    /// must be `Sendable`.
    public convenience init<Target: AnyObject & Sendable>(
        on loop: TimerLoop,
        rate: FrameRateRange,
        in modes: [LoopMode] = [.default],
        paused: Bool = false,
        target: Target,
        action: @escaping @Sendable (Target, FrameTicker, Frame) -> Void
    ) throws(TimerError) {
        let reference = WeakReference(target)
        try self.init(on: loop, rate: rate, in: modes, paused: paused) { ticker, frame in
            guard let target = reference.object else { return ticker.invalidate() }
            action(target, ticker, frame)
        }
    }

    private func deliver(_ frame: tk_frame) {
        // Read under the lock and held while it runs: an invalidate, from
        // another thread or from the action, lets go of the ticker's copy.
        guard let action = held.withLock({ $0.action }) else { return }
        action(self, Frame(frame))
    }

    // MARK: State

    private func info() -> tk_frame_ticker_info? {
        held.withLock { held in
            guard let handle = held.ticker else { return nil }
            var info = tk_frame_ticker_info()
            SystemError.expectSuccess(tk_frame_ticker_get_info(handle, &info), "tk_frame_ticker_get_info")
            return info
        }
    }

    /// Whether the ticker can still deliver frames: false after
    /// ``invalidate()``.
    public var isValid: Bool {
        held.withLock { $0.ticker != nil }
    }

    /// Whether frames are paused. While paused, the ticker costs the loop
    /// nothing: no wake-ups. Resuming keeps the grid (the next frame is the
    /// first grid point still ahead), and the pause is not counted as
    /// dropped frames.
    ///
    /// An invalidated ticker reads as paused, and setting it does nothing
    /// there. If the loop cannot
    /// take the change (out of memory), the ticker stays as it was;
    /// ``setPaused(_:)`` reports that error.
    public var isPaused: Bool {
        get { info().map { $0.paused != 0 } ?? true }
        set { try? setPaused(newValue) }
    }

    /// Pauses or resumes the ticker; see ``isPaused``.
    ///
    /// - Throws: ``TimerError/invalidated`` after ``invalidate()``;
    ///   ``TimerError/system(_:)`` if the loop cannot take the change
    ///   (nothing changed) or could not take an earlier frame (see
    ///   ``failure``).
    public func setPaused(_ paused: Bool) throws(TimerError) {
        try withTicker { handle throws(TimerError) in
            _ = try TimerError.check(tk_frame_ticker_set_paused(handle, paused ? 1 : 0),
                                     "tk_frame_ticker_set_paused")
        }
    }

    /// Changes the rates. The grid is re-aligned: it starts at the latest
    /// frame's timestamp (now, while paused; before the first frame, where
    /// the grid started, so that calls made more often than once a period do
    /// not put the first frame off), and the next frame is the first point
    /// of the new grid still ahead.
    /// Grid points passed meanwhile are not counted as dropped frames; from
    /// the action, the latest frame is the one it was called for, and the
    /// new grid's points it runs past are not counted either.
    ///
    /// - Throws: ``TimerError/invalidFrameRate(_:)`` (nothing changed),
    ///   ``TimerError/invalidated``, ``TimerError/system(_:)``.
    public func setRate(_ rate: FrameRateRange) throws(TimerError) {
        try withTicker { handle throws(TimerError) in
            let result = tk_frame_ticker_set_rate(handle, rate.rawRange)
            if result == -EINVAL { throw .invalidFrameRate(rate) }
            _ = try TimerError.check(result, "tk_frame_ticker_set_rate")
        }
    }

    /// Delivers frames in `mode` too; the grid and the next frame stay.
    ///
    /// - Throws: a mode error, ``TimerError/invalidated``, ``TimerError/system(_:)``.
    public func add(_ mode: LoopMode) throws(TimerError) {
        try withTicker { handle throws(TimerError) in
            // Named once the ticker is known to be valid, so that an
            // invalidated ticker names no new mode.
            let (set, common) = TimerLoop.cModes(try loop.modeSet(mode))
            if common {
                _ = try TimerError.check(
                    tk_frame_ticker_join_common_modes(handle), "tk_frame_ticker_join_common_modes")
                return
            }
            var info = tk_frame_ticker_info()
            SystemError.expectSuccess(tk_frame_ticker_get_info(handle, &info), "tk_frame_ticker_get_info")
            _ = try TimerError.check(tk_frame_ticker_set_modes(handle, info.modes | set),
                                     "tk_frame_ticker_set_modes")
        }
    }

    private func withTicker(_ body: (OpaquePointer) throws(TimerError) -> Void) throws(TimerError) {
        try held.withLock { (held) throws(TimerError) in
            guard let handle = held.ticker else { throw .invalidated }
            try body(handle)
        }
    }

    /// The rate in force, in frames per second; `nil` after ``invalidate()``.
    public var framesPerSecond: Double? {
        info()?.rate
    }

    /// The period in force; `nil` after ``invalidate()``. It is whole
    /// nanoseconds: 1 s ÷ the range's maximum rounded to the nearest
    /// nanosecond, times k. At 60 per second it is 16,666,667 ns, so the
    /// frames, which never drift from their grid, come 20 ns a second
    /// behind an exact 60 Hz.
    public var frameDuration: Duration? {
        info().map { .nanoseconds($0.period_ns) }
    }

    /// The next frame's grid time; `nil` while paused, after
    /// ``invalidate()``, or when the next grid point lies past the clock's
    /// last instant (`Int64.max` nanoseconds), which never comes.
    public var nextTimestamp: MonotonicClock.Instant? {
        guard let next = info()?.next_timestamp_ns, next != .max else { return nil }
        return MonotonicClock.Instant(nanoseconds: next)
    }

    /// Frames delivered so far (0 after ``invalidate()``).
    public var frameCount: UInt64 {
        info()?.frames ?? 0
    }

    /// Grid points dropped so far, over all frames (0 after ``invalidate()``).
    public var droppedFrameCount: UInt64 {
        info()?.dropped_frames ?? 0
    }

    /// Why the ticker stopped delivering frames on its own: the loop could
    /// not take its next frame (out of memory). `nil` while it runs.
    /// Invalidate a failed ticker and make a new one.
    public var failure: TimerError? {
        guard let error = info()?.error, error < 0 else { return nil }
        return TimerError(SystemError(errno: Errno(rawValue: error), function: "tk_loop_reschedule"))
    }

    /// Stops the ticker for good: no frame starts after this returns (one
    /// the loop's thread has already begun finishes), the loop lets go of
    /// the ticker, and the ticker lets go of its action (and what the action
    /// captures). Idempotent; safe from any thread and from the action.
    ///
    /// The corresponding C function is `tk_frame_ticker_destroy`.
    public func invalidate() {
        let (handle, action) = held.withLock { held in
            defer { held = Held(ticker: nil, action: nil) }
            return (held.ticker, held.action)
        }
        // Released here, with the lock let go: what the action captures may
        // have a deinit that uses this ticker.
        _ = consume action
        guard let handle else { return }
        SystemError.expectSuccess(tk_frame_ticker_destroy(handle), "tk_frame_ticker_destroy")
    }
}
