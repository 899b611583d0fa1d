import TimerKit

/// Where ``TrustedClock`` and ``SuspendAwareStopwatch`` get their clock
/// readings: the boot clock, the monotonic clock, the wall clock and the boot
/// id.
///
/// Programs use ``SystemClockReadings``, the real clocks. Tests give their own
/// readings, so that the clocks move independently and exactly as a scenario
/// needs: a suspend (boot advances, monotonic does not), a wall clock set back
/// an hour, a reboot (a new boot id, the boot clock near zero again).
///
/// ```swift
/// import Synchronization
///
/// final class Scenario: ClockReadings {
///     let now = Mutex((boot: Duration.seconds(100), monotonic: Duration.seconds(100),
///                      wall: Duration.seconds(1_767_268_800)))
///     var boot: BootClock.Instant { BootClock.Instant(offset: now.withLock { $0.boot }) }
///     var monotonic: MonotonicClock.Instant {
///         MonotonicClock.Instant(offset: now.withLock { $0.monotonic })
///     }
///     var wall: Duration { now.withLock { $0.wall } }
///     var bootID: String? { "4b1e5d50-5c9b-4b3c-8d6e-0a7d3f2e9c11" }
///     /// The machine sleeps: the boot and wall clocks move, the monotonic one does not.
///     func suspend(for time: Duration) { now.withLock { $0.boot += time; $0.wall += time } }
/// }
/// let scenario = Scenario()
/// let clock = TrustedClock(readings: scenario)
/// scenario.suspend(for: .seconds(3600))
/// ```
///
/// Conforming types must be safe to call from any thread.
public protocol ClockReadings: Sendable {
    /// The boot clock (`CLOCK_BOOTTIME`): counts suspend, cannot be set.
    var boot: BootClock.Instant { get }
    /// The monotonic clock (`CLOCK_MONOTONIC`): stops while suspended.
    var monotonic: MonotonicClock.Instant { get }
    /// The wall clock (`CLOCK_REALTIME`): time since the Unix epoch, which
    /// the user or NTP may step.
    var wall: Duration { get }
    /// This boot's id (changes at every boot), or `nil` if it cannot be read.
    /// Any string works, the empty one too: a state file keeps one that is
    /// not short printable ASCII, or is empty, as a hash.
    var bootID: String? { get }
    /// Suspends until ``boot`` reads `deadline`, at most `tolerance` later.
    ///
    /// It runs on the caller's executor (`nonisolated(nonsending)`), so that
    /// a sleep that resumes on that executor (as `TimerLoop`'s and TimerKit's
    /// clocks' do from an actor or task on a loop) ends there with no
    /// hop. An implementation declared plain `async` still conforms: its
    /// sleep leaves the caller's executor, and the task goes back to it
    /// when the sleep ends.
    nonisolated(nonsending)
    func sleep(until deadline: BootClock.Instant, tolerance: Duration?) async throws
}

extension ClockReadings {
    /// Sleeps on the real `BootClock` for the time these readings' ``boot``
    /// has left until `deadline`, at most `tolerance` longer.
    ///
    /// The time left is measured on ``boot``, which need not read what the
    /// machine's boot clock reads (a test's scripted clocks): a sleep until
    /// a deadline of the machine's clock would end at once when ``boot`` is
    /// behind it, and a ``TrustedClock`` sleeping on these readings would
    /// spin, or would wait for the machine's clock to catch up when ``boot``
    /// is ahead. Readings whose clocks move otherwise than in real time
    /// implement this themselves, as `LoopClockReadings` does.
    ///
    /// It runs on the caller's executor: see `BootClock`'s
    /// `sleep(for:tolerance:)`.
    nonisolated(nonsending)
    public func sleep(until deadline: BootClock.Instant, tolerance: Duration?) async throws {
        try await BootClock().sleep(for: deadline - boot, tolerance: tolerance)
    }
}

/// The machine's clocks, read through the C core (vDSO reads, no system
/// call), and the boot id from `/proc/sys/kernel/random/boot_id`.
public struct SystemClockReadings: ClockReadings {
    /// The real clocks.
    public init() {}

    /// `CLOCK_BOOTTIME`.
    public var boot: BootClock.Instant { BootClock().now }

    /// `CLOCK_MONOTONIC`.
    public var monotonic: MonotonicClock.Instant { MonotonicClock().now }

    /// `CLOCK_REALTIME`, since the Unix epoch.
    public var wall: Duration { WallClock().now.offset }

    /// This boot's id (read once per process: it cannot change while the
    /// process lives).
    public var bootID: String? { Self.cachedBootID }

    /// Sleeps on the `BootClock` until it reads `deadline`, at most
    /// `tolerance` later, on the caller's executor: from an actor or a task
    /// on a real `TimerLoop`, on that loop, with no hop.
    nonisolated(nonsending)
    public func sleep(until deadline: BootClock.Instant, tolerance: Duration?) async throws {
        try await BootClock().sleep(until: deadline, tolerance: tolerance)
    }

    private static let cachedBootID: String? = try? BootClock.bootID()
}
