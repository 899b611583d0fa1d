/// Watches a stream of frame times: frames per second, frame-time
/// percentiles, dropped frames and hitch time, as an FPS label does, for a
/// ``FrameTicker`` or any repeating work.
///
/// ```swift
/// var monitor = try FrameRateMonitor(frameInterval: .seconds(1) / 60)
/// while !done {
///     render(at: MonotonicClock.now, skipped: 0)      // a frame of work
///     if let reading = monitor.record(MonotonicClock.now) {
///         print(reading)  // "59.5 fps, p99 25.0 ms, 1 dropped, hitch 8.3 ms/s (warning)"
///     }
/// }
/// ```
///
/// From a ``FrameTicker``, record its frames (`record(_:)` takes a ``FrameTicker/Frame``)
/// on the loop's thread, keeping the monitor behind a lock if other threads
/// read it.
///
/// - **Frames per second** are counted over a window (1 s unless told):
///   once at least a window has passed since the window began, the frames
///   recorded since, divided by the time they took, make a ``Reading``, and
///   a new window begins at that frame.
/// - **Frame time** is the time between two recorded frames. Its
///   percentiles come from a fixed set of buckets made up front, within
///   0.8 % (see ``Reading/frameTimeP99``): recording a frame never allocates.
/// - **Dropped frames** for a frame time Δ are round(Δ ÷ interval) − 1 (at
///   least 0). For a ticker's frame they are the ticker's own count,
///   ``FrameTicker/Frame/droppedFrames``, so that the two agree across the
///   ticker's changes of rate.
/// - **Hitch time** is how much longer than the interval each frame took
///   (for a ticker's frame, than one of the grid steps it spans: Δ ÷
///   (dropped + 1)), summed over the window, in milliseconds per second;
///   it is graded
///   ``Grade/good`` up to 5 ms/s, ``Grade/warning`` up to 10 and
///   ``Grade/critical`` above, unless other thresholds are given.
///
/// Everything is computed from the times given, so on a manual clock every
/// figure is exact. A monitor is a value: keep it on one thread (the loop's,
/// say) or behind a lock.
public struct FrameRateMonitor: Sendable {
    /// How bad the hitch time of a window is.
    public enum Grade: String, Sendable, Hashable, CustomStringConvertible {
        /// At most the warning threshold: smooth.
        case good
        /// Above the warning threshold, at most the critical one.
        case warning
        /// Above the critical threshold: the stutter shows.
        case critical

        /// "good", "warning" or "critical".
        public var description: String { rawValue }
    }

    /// The hitch times, in milliseconds per second, above which a window
    /// grades ``Grade/warning`` and ``Grade/critical``. They are taken as
    /// given: a hitch time above the critical one grades critical whatever
    /// the warning one is, and a threshold that is not a number is never
    /// passed.
    public struct Thresholds: Sendable, Hashable {
        /// Above this, a warning (5 ms/s by default).
        public var warning: Double
        /// Above this, critical (10 ms/s by default).
        public var critical: Double

        /// Thresholds in milliseconds of hitch per second.
        public init(warning: Double = 5, critical: Double = 10) {
            self.warning = warning
            self.critical = critical
        }

        /// 5 and 10 ms/s.
        public static let standard = Thresholds()

        func grade(_ hitch: Double) -> Grade {
            hitch > critical ? .critical : hitch > warning ? .warning : .good
        }
    }

    /// What one window (or, from ``summary``, the whole run) looked like.
    public struct Reading: Sendable, Hashable, CustomStringConvertible {
        /// Frame times counted (frames after the window's first).
        public var frames: Int
        /// The time those frames took (the sum of their frame times).
        public var elapsed: Duration
        /// `frames ÷ elapsed`; infinite when the frames took no time (their
        /// timestamps repeat).
        public var framesPerSecond: Double
        /// The median frame time.
        public var frameTimeP50: Duration
        /// The 95th percentile frame time.
        public var frameTimeP95: Duration
        /// The 99th percentile frame time, within 0.8 % (a histogram
        /// bucket): the lowest value of its bucket; in the bucket of the
        /// window's smallest frame time, that time, and in the bucket of its
        /// largest, that one (in a bucket that holds both, the smallest,
        /// unless the percentile is the last frame time). So a steady frame
        /// time is reported exactly, and so is a steady one with hitches of
        /// one length, where the hitches are more than 0.8 % longer.
        public var frameTimeP99: Duration
        /// The longest frame time.
        public var frameTimeMax: Duration
        /// Frames dropped: the sum of round(Δ ÷ interval) − 1, or of a
        /// ticker's frames' own counts.
        public var droppedFrames: UInt64
        /// Time beyond the interval (for a ticker's frame, beyond one grid
        /// step), summed, in milliseconds per second of `elapsed` (0 when
        /// `elapsed` is zero).
        public var hitchMillisecondsPerSecond: Double
        /// The grade of the hitch time.
        public var grade: Grade

        /// "59.5 fps, p99 25.0 ms, 1 dropped, hitch 8.3 ms/s (warning)".
        public var description: String {
            "\(Self.fixed(framesPerSecond, 1)) fps, p99 \(Self.milliseconds(frameTimeP99)) ms, "
                + "\(droppedFrames) dropped, hitch \(Self.fixed(hitchMillisecondsPerSecond, 1)) ms/s (\(grade))"
        }

        static func milliseconds(_ duration: Duration) -> String {
            fixed(Double(duration.saturatingNanoseconds) / 1e6, 1)
        }

        /// `value` with `digits` decimals, without Foundation; from 2^53 ÷
        /// 10^digits on (where `value` × 10^digits is past the whole numbers a
        /// `Double` holds exactly), as Swift writes it ("1e+19").
        static func fixed(_ value: Double, _ digits: Int) -> String {
            var scale = 1.0
            for _ in 0..<digits { scale *= 10 }
            guard value.isFinite, abs(value) * scale < 0x1p53 else { return "\(value)" }
            let scaled = (abs(value) * scale).rounded()
            let whole = Int64(scaled / scale)
            var fraction = String(Int64(scaled) - whole * Int64(scale))
            while fraction.count < digits { fraction = "0" + fraction }
            let sign = value < 0 && scaled != 0 ? "-" : ""
            return digits == 0 ? "\(sign)\(whole)" : "\(sign)\(whole).\(fraction)"
        }
    }

    /// The expected time between frames. A ticker's frames are measured
    /// against the ticker's grid instead (see the `record(_:)` that takes a
    /// ``FrameTicker/Frame``).
    public let frameInterval: Duration
    /// How much frame time a reading covers at least.
    public let window: Duration
    /// The grading thresholds.
    public let thresholds: Thresholds

    /// The latest window's reading; `nil` until the first window is complete.
    public private(set) var latest: Reading?

    private let intervalNanoseconds: Int64
    private let windowNanoseconds: Int64
    private var previous: Int64?

    fileprivate struct Tally: Sendable {
        var time: Int64 = 0
        var frames = 0
        var dropped: UInt64 = 0
        var hitch: Int64 = 0
        var histogram = FrameTimeHistogram()

        mutating func reset() {
            time = 0
            frames = 0
            dropped = 0
            hitch = 0
            histogram.reset()
        }
    }

    private var current = Tally()
    private var whole = Tally()

    /// A monitor for frames due every `frameInterval`.
    ///
    /// - Parameters:
    ///   - frameInterval: the expected frame time (1 s ÷ the rate).
    ///   - window: how much time each reading covers at least (1 s).
    ///   - thresholds: hitch grading, in ms per second.
    /// - Throws: ``TimerError/invalidMonitorSetting(_:)`` for an interval or
    ///   window that is not positive (or below a nanosecond), or longer
    ///   than `Int64.max` nanoseconds (about 292 years), which the
    ///   monitor's arithmetic cannot hold.
    public init(
        frameInterval: Duration,
        window: Duration = .seconds(1),
        thresholds: Thresholds = .standard
    ) throws(TimerError) {
        let interval = frameInterval.saturatingNanoseconds
        let span = window.saturatingNanoseconds
        let longest = Duration.nanoseconds(Int64.max)
        guard interval >= 1, frameInterval <= longest else { throw .invalidMonitorSetting(frameInterval) }
        guard span >= 1, window <= longest else { throw .invalidMonitorSetting(window) }
        self.frameInterval = frameInterval
        self.window = window
        self.thresholds = thresholds
        intervalNanoseconds = interval
        windowNanoseconds = span
    }

    /// A monitor for frames at `framesPerSecond`; see
    /// ``init(frameInterval:window:thresholds:)``.
    ///
    /// - Throws: ``TimerError/invalidFrameRate(_:)`` for a rate outside
    ///   1e-6…1e9 (a frame ticker's: a period from 1 ns to 11.6 days), or
    ///   not a number; ``TimerError/invalidMonitorSetting(_:)`` for a
    ///   `window` that is not positive.
    public init(
        framesPerSecond: Double,
        window: Duration = .seconds(1),
        thresholds: Thresholds = .standard
    ) throws(TimerError) {
        // The frame ticker's bounds: a period from 1 ns to 11.6 days.
        guard framesPerSecond >= 1e-6, framesPerSecond <= 1e9 else {
            throw .invalidFrameRate(FrameRateRange(fixed: framesPerSecond))
        }
        try self.init(
            frameInterval: .nanoseconds(Int64((1e9 / framesPerSecond).rounded())),
            window: window, thresholds: thresholds)
    }

    /// Records a frame at `timestamp`. Returns a new reading when this frame
    /// completes a window, else `nil`.
    ///
    /// A timestamp earlier than the previous frame's is not a frame time: it
    /// restarts the count from this frame (as after a pause) and is
    /// otherwise ignored.
    @discardableResult
    public mutating func record(_ timestamp: MonotonicClock.Instant) -> Reading? {
        record(nanoseconds: timestamp.nanoseconds, expected: .interval(intervalNanoseconds))
    }

    /// Records a ticker's frame at its grid time, taking its drops from the
    /// ticker (``FrameTicker/Frame/droppedFrames``, which follows rate
    /// changes) and its hitch as the frame time beyond one of the grid steps
    /// it spans. Record every frame the ticker delivers: the grid points of
    /// a frame not recorded are not counted as dropped. Call ``restart()``
    /// when the ticker resumes from a pause: a paused ticker drops nothing,
    /// so without it the first frame after the pause counts the whole pause
    /// as one long frame time (no hitch, no drop, but a lower frame rate and
    /// higher percentiles). See the `record(_:)` that takes an instant.
    @discardableResult
    public mutating func record(_ frame: FrameTicker.Frame) -> Reading? {
        record(nanoseconds: frame.timestamp.nanoseconds, expected: .tickerDrops(frame.droppedFrames))
    }

    /// Forgets the previous frame, so that the next one starts a new window
    /// (after a pause, say) instead of counting the gap as a hitch. The
    /// ``summary`` keeps what was counted before.
    public mutating func restart() {
        previous = nil
        current.reset()
    }

    /// What a frame time is measured against.
    private enum Expected {
        /// Frames due every so many nanoseconds (at least 1).
        case interval(Int64)
        /// A ticker's frame, with the grid points the ticker skipped before it.
        case tickerDrops(UInt64)
    }

    private mutating func record(nanoseconds now: Int64, expected: Expected) -> Reading? {
        guard let previous, now >= previous else {
            self.previous = now
            current.reset()
            return nil
        }
        self.previous = now
        // Saturating: instants may be far apart (or negative).
        let (difference, overflow) = now.subtractingReportingOverflow(previous)
        let frameTime = overflow ? Int64.max : difference
        let dropped: UInt64
        let hitch: Int64
        switch expected {
        case .interval(let interval):
            let (quotient, remainder) = frameTime.quotientAndRemainder(dividingBy: interval)
            let rounded = quotient + (remainder >= interval - remainder ? 1 : 0)
            dropped = UInt64(max(0, rounded - 1))
            hitch = max(0, frameTime - interval)
        case .tickerDrops(let skipped):
            dropped = skipped
            // The frame time spans skipped + 1 grid steps.
            let step = skipped < UInt64(Int64.max) ? frameTime / Int64(skipped + 1) : 0
            hitch = frameTime - step
        }
        current.add(frameTime, dropped, hitch)
        whole.add(frameTime, dropped, hitch)
        guard current.time >= windowNanoseconds else { return nil }
        let reading = current.reading(thresholds)
        latest = reading
        current.reset()
        return reading
    }

    /// The whole run so far, as one reading (`nil` before two frames):
    /// frames per second over all frame times recorded, their percentiles,
    /// all drops and the hitch time per second of the run.
    public var summary: Reading? {
        guard whole.frames > 0 else { return nil }
        return whole.reading(thresholds)
    }
}

extension FrameRateMonitor.Tally {
    mutating func add(_ frameTime: Int64, _ dropped: UInt64, _ hitch: Int64) {
        frames += 1
        time = time.addingReportingOverflow(frameTime).overflow ? .max : time + frameTime
        self.dropped = self.dropped.addingReportingOverflow(dropped).overflow ? .max : self.dropped + dropped
        self.hitch = self.hitch.addingReportingOverflow(hitch).overflow ? .max : self.hitch + hitch
        histogram.record(frameTime)
    }

    /// The reading of the frames counted. Frames > 0.
    func reading(_ thresholds: FrameRateMonitor.Thresholds) -> FrameRateMonitor.Reading {
        // The time of the frames counted, which leaves out the gap a
        // restart makes.
        let seconds = Double(time) / 1e9
        // No time, no hitch: frames whose timestamps repeat.
        let hitchPerSecond = time > 0 ? Double(hitch) / 1e6 / seconds : 0
        func percentile(_ p: Double) -> Duration { .nanoseconds(histogram.percentile(p) ?? 0) }
        return FrameRateMonitor.Reading(
            frames: frames,
            elapsed: .nanoseconds(time),
            framesPerSecond: time > 0 ? Double(frames) / seconds : .infinity,
            frameTimeP50: percentile(0.50),
            frameTimeP95: percentile(0.95),
            frameTimeP99: percentile(0.99),
            frameTimeMax: .nanoseconds(histogram.largest),
            droppedFrames: dropped,
            hitchMillisecondsPerSecond: hitchPerSecond,
            grade: thresholds.grade(hitchPerSecond))
    }
}
