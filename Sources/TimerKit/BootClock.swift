import CTimerCore

/// The machine's clock that counts time since boot, including time spent
/// suspended (`CLOCK_BOOTTIME`): the standard library's `ContinuousClock` on
/// Linux.
///
/// The user cannot set it, so it is what a countdown that must survive a
/// suspend, or trusted time, is measured on.
///
/// ```swift
/// let clock = BootClock()
/// try await clock.sleep(for: .seconds(5), tolerance: .milliseconds(500))
/// ```
public struct BootClock: KernelClock, Sendable {
    /// A reading of the boot clock.
    public typealias Instant = ClockInstant<BootClock>

    /// `CLOCK_BOOTTIME`.
    public static var clockID: ClockID { .boot }

    /// The clock. All instances read the same clock.
    public init() {}
}

extension ClockInstant where Clock == BootClock {
    /// The same instant of the same kernel clock, as the standard library's
    /// `ContinuousClock` names it (exact: both read `CLOCK_BOOTTIME`).
    public init(_ instant: ContinuousClock.Instant) {
        self.init(offset: ContinuousClock().systemEpoch.duration(to: instant))
    }

    /// This instant as a `ContinuousClock.Instant` (exact).
    public var continuousInstant: ContinuousClock.Instant {
        ContinuousClock().systemEpoch.advanced(by: offset)
    }
}

extension BootClock {
    /// This boot's id (the UUID in `/proc/sys/kernel/random/boot_id`): it
    /// changes at every boot, so it tells whether a boot-clock reading saved
    /// earlier belongs to this boot, where it can still be compared with now.
    ///
    /// The corresponding C function is `tk_boot_id`.
    ///
    /// - Throws: ``TimerError/system(_:)`` with the error of opening or
    ///   reading the file.
    public static func bootID() throws(TimerError) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        _ = try TimerError.check(tk_boot_id(&buffer, buffer.count), "tk_boot_id")
        let bytes = buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
