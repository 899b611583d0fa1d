import TimerKit

/// Measures elapsed time on the boot clock and on the monotonic clock at once,
/// so a program can tell how long the machine was suspended meanwhile.
///
/// The boot clock counts suspend, the monotonic clock does not: the difference
/// of what they measured is the time spent suspended. That is the "how long
/// was the app in the background" question of a countdown that must stay
/// right across a suspend:
///
/// ```swift
/// var remaining = Duration.seconds(60)
/// let stopwatch = SuspendAwareStopwatch()
/// // ... later, on resuming ...
/// let reading = stopwatch.read()
/// remaining -= reading.elapsed              // wall-clock changes do not matter
/// log("suspended for \(reading.suspended)")
/// ```
public struct SuspendAwareStopwatch: Sendable {
    /// One look at the stopwatch.
    public struct Reading: Sendable, Hashable {
        /// Time since the start, suspend included (boot clock).
        public var elapsed: Duration
        /// Time since the start while the machine was running (monotonic clock).
        public var awake: Duration
        /// `elapsed − awake`: time spent suspended (never negative).
        public var suspended: Duration
    }

    /// The boot clock at the start.
    public private(set) var startBoot: BootClock.Instant
    /// The monotonic clock at the start.
    public private(set) var startMonotonic: MonotonicClock.Instant
    private let readings: any ClockReadings

    /// Starts now, on `readings` (the machine's clocks by default).
    public init(readings: any ClockReadings = SystemClockReadings()) {
        self.readings = readings
        // Boot first, monotonic second here, and the other way round in
        // read(): the gap between the two reads counts as elapsed, never as
        // awake, so `suspended` cannot come out negative from read order.
        startBoot = readings.boot
        startMonotonic = readings.monotonic
    }

    /// Reads both clocks.
    public func read() -> Reading {
        let monotonic = readings.monotonic
        let boot = readings.boot
        let elapsed = boot - startBoot
        let awake = monotonic - startMonotonic
        return Reading(elapsed: elapsed, awake: awake, suspended: max(.zero, elapsed - awake))
    }

    /// Time since the start, suspend included.
    public var elapsed: Duration { read().elapsed }

    /// Time spent suspended since the start.
    public var suspended: Duration { read().suspended }

    /// Starts again from now and returns the reading up to now.
    @discardableResult
    public mutating func restart() -> Reading {
        let reading = read()
        startBoot = readings.boot
        startMonotonic = readings.monotonic
        return reading
    }
}
