/// One tick of an observed countdown: its remaining time when the tick was
/// delivered, as a whole number of the observation's granularity.
public struct CountdownTick: Sendable, Hashable {
    /// The countdown.
    public var countdown: Countdown
    /// The remaining time at the tick: from the center's clock at that
    /// moment, never from counting ticks.
    public var remaining: Duration
    /// ``remaining`` in units of the granularity, rounded up: what a display
    /// shows ("3" for 2.4 s left at a one-second granularity). Ticks come
    /// when this value changes.
    public var value: Int64
    /// Values skipped since the last tick because the loop was late or
    /// server time moved forward (the display jumped by `skipped + 1`).
    public var skipped: UInt64
}

/// A countdown reached its end. Every countdown's end is delivered exactly
/// once, observed or not, never before its end.
public struct CountdownEnd: Sendable, Hashable {
    /// The countdown that ended (its handle names nothing any more).
    public var countdown: Countdown
    /// Its group, if it had one.
    public var group: CountdownGroup?
    /// How long after its end the event was delivered, on the center's
    /// time: about zero, unless the loop was busy or the machine was
    /// suspended at the end, a re-sync moved server time forward past the
    /// end, or the countdown was added with its end already past (then it
    /// is how long past). The center keeps ends in whole nanoseconds of its
    /// time base, saturated at the `Int64` range: an end added before the
    /// range (over 292 years before the base's origin) is kept at its start,
    /// and its lateness is measured from there.
    public var lateness: Duration
}

/// A tick of a group or of the whole center: a moment on the center's time
/// base, on the grid of the observation's granularity, at which the
/// observer redraws. ``CountdownCenter/remaining(_:at:)`` gives any
/// countdown's remaining time at that moment.
public struct CenterTick: Sendable, Hashable {
    /// The moment, in nanoseconds on the center's time base (boot clock or
    /// server time since the epoch).
    public var time: Int64
    /// Grid points skipped since the last tick because the loop was late or
    /// server time moved forward.
    public var skipped: UInt64
}

/// What an observer of one countdown hears.
public enum CountdownEvent: Sendable, Hashable {
    /// Its displayed value changed.
    case tick(CountdownTick)
    /// It ended; the observation ends with it.
    case ended(CountdownEnd)
}

/// What an observer of a group hears.
public enum GroupEvent: Sendable, Hashable {
    /// A tick of the group's grid.
    case tick(CenterTick)
    /// A countdown of the group ended.
    case ended(CountdownEnd)
}

/// The center's time base moved by more than the threshold given to
/// ``CountdownCenter/onTimeBaseJump(threshold:_:)``: a sync of its
/// trusted clock changed server time (the first sync, from the wall
/// clock's reading the center counted from): the moment to reload what the
/// countdowns show.
public struct TimeBaseJump: Sendable, Hashable {
    /// How far server time moved against the boot clock: positive forward.
    public var change: Duration
}
