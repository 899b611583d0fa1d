/// A clock that TimerKit's timers, sleeps and ticks can be measured on.
///
/// Its instants are ``ClockInstant``s of the clock itself, so that a timer's
/// fire date, a tick's timestamp and a sleep's deadline are typed by their
/// clock. ``clockID`` says which of the C core's clocks a reading is.
///
/// TimerKit's clocks: ``MonotonicClock``, ``BootClock`` and ``WallClock``
/// (the machine's clocks, see ``KernelClock``) and ``ManualClock`` (a clock
/// for tests that moves only when told).
public protocol TimerClock: Clock where Instant == ClockInstant<Self>, Duration == Swift.Duration {
    /// The C core's clock behind this clock's readings.
    static var clockID: ClockID { get }
}

/// One of the machine's clocks, read from the kernel: every instance reads
/// the same clock, so a new one costs nothing.
///
/// One implementation serves all of them: reading the clock (a vDSO call,
/// no system call), its resolution, and sleeping on TimerKit's own loop,
/// which honours the tolerance (nearby sleeps share a wake-up; none ends
/// early) and gives a cancelled sleep's timer back at once.
public protocol KernelClock: TimerClock {
    /// The clock. All instances read the same clock.
    init()
}

extension KernelClock {
    /// The current reading, as in `BootClock.now`.
    public static var now: Instant {
        Self().now
    }

    /// The current reading.
    ///
    /// - Complexity: O(1); a vDSO read, no system call and no allocation.
    public var now: Instant {
        Instant(nanoseconds: Self.clockID.read())
    }

    /// The clock's resolution as the kernel reports it.
    public var minimumResolution: Duration {
        Self.clockID.resolution()
    }

    /// Suspends until the clock reads `deadline`, at most `tolerance` later.
    /// A negative tolerance counts as none, as the standard library's clocks
    /// take it; one that takes the deadline + tolerance to the end of the
    /// clock's range (`Int64.max` nanoseconds) leaves the sleep to wake-ups
    /// that something else brings, as a ``LoopTimer``'s does.
    ///
    /// It runs on the caller's executor. On a loop's executor (an actor or a
    /// task on a ``TimerLoop``), the sleep's timer goes on that loop and the
    /// sleep ends on its thread, with no hop; elsewhere TimerKit's shared
    /// sleep loop serves it.
    ///
    /// - Throws: `CancellationError` if the task is cancelled first (the
    ///   sleep's timer leaves the loop at once); ``TimerError`` if TimerKit's
    ///   sleep loop cannot be started (a later sleep tries again), or
    ///   stopped because its run failed.
    nonisolated(nonsending)
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await sleepOnCallersLoop(until: deadline.deadlineNanoseconds, tolerance: tolerance)
    }

    /// Suspends for `duration`, at most `tolerance` longer; see
    /// ``sleep(until:tolerance:)``. (The standard library's generic paths,
    /// such as `Task.sleep(for:clock:)`, leave the caller's executor first;
    /// a sleep made that way is served by the shared sleep loop.)
    nonisolated(nonsending)
    public func sleep(for duration: Duration, tolerance: Duration? = nil) async throws {
        try await sleepOnCallersLoop(until: (now + duration).deadlineNanoseconds, tolerance: tolerance)
    }

    /// A sleep on the loop whose job the calling thread runs, if any, else on
    /// the shared sleep loop. Called directly, not through `Clock`'s
    /// requirement, whose calls leave the caller's executor.
    nonisolated(nonsending)
    private func sleepOnCallersLoop(until deadline: Int64, tolerance: Duration?) async throws {
        if let loop = TimerLoop.executingRealLoop {
            return try await Sleeper.sleepOnItsLoop(
                loop, clock: Self.clockID, until: deadline, tolerance: tolerance)
        }
        try await SleepService.shared.sleep(clock: Self.clockID, until: deadline, tolerance: tolerance)
    }
}

extension TimerClock where Self == MonotonicClock {
    /// The monotonic clock, as in `loop.now(.monotonic)`.
    public static var monotonic: MonotonicClock { MonotonicClock() }
}

extension TimerClock where Self == BootClock {
    /// The boot clock, as in `LoopTimer(after: .seconds(5), clock: .boot) { ... }`.
    public static var boot: BootClock { BootClock() }
}

extension TimerClock where Self == WallClock {
    /// The wall clock, as in `loop.now(.wall)`.
    public static var wall: WallClock { WallClock() }
}
