import CTimerCore

/// The frame rates a ``FrameTicker`` may run at, in frames per second, and
/// the one it prefers.
///
/// The maximum sets the finest grid (one frame every 1 s ÷ maximum); the
/// rates the ticker can run at are maximum ÷ k for whole k, down to the
/// minimum: 120, 60, 40, 30 … for a maximum of 120, so every rate's frames
/// fall on the finest grid. The ticker starts at the rung nearest the
/// preferred rate (of two equally near, the faster: 60 for 50 in 30…120).
/// When the range offers more than one rung, it adapts once per second of
/// frames: one rung down when more than a tenth of the window's grid points
/// (frames delivered and dropped) were dropped, one rung up (never above the rung it started at) when none was
/// and the longest callback took at most half of the faster rung's period.
///
/// Periods are whole nanoseconds (see ``FrameTicker/frameDuration``).
///
/// ```swift
/// let steady = FrameRateRange(fixed: 60)                         // always 60 Hz
/// let adaptive = FrameRateRange(minimum: 30, maximum: 120, preferred: 120)
/// ```
public struct FrameRateRange: Sendable, Hashable, CustomStringConvertible {
    /// The lowest rate the ticker may step down to (≥ 1e-6).
    public var minimum: Double
    /// The highest rate, which sets the grid (≤ 1e9, a period of ≥ 1 ns).
    public var maximum: Double
    /// The rate to run at when the work allows, between the minimum and the
    /// maximum; `nil` for the maximum.
    public var preferred: Double?

    /// A range; checked when a ticker takes it (``TimerError/invalidFrameRate(_:)``).
    public init(minimum: Double, maximum: Double, preferred: Double? = nil) {
        self.minimum = minimum
        self.maximum = maximum
        self.preferred = preferred
    }

    /// One rate and nothing else: the ticker never adapts.
    public init(fixed framesPerSecond: Double) {
        self.init(minimum: framesPerSecond, maximum: framesPerSecond, preferred: framesPerSecond)
    }

    /// "30–120 fps, preferring 60", or "60 fps"; a rate that is not a whole
    /// number as Swift writes it ("59.94").
    public var description: String {
        // As one rate: a fixed range, a not-a-number one too.
        func same(_ a: Double, _ b: Double) -> Bool { a == b || (a.isNaN && b.isNaN) }
        if same(minimum, maximum) && same(preferred ?? maximum, maximum) { return "\(Self.rate(maximum)) fps" }
        let prefers = preferred.map { ", preferring \(Self.rate($0))" } ?? ""
        return "\(Self.rate(minimum))–\(Self.rate(maximum)) fps\(prefers)"
    }

    /// A whole rate without its ".0" (up to 2^53, past which a `Double` holds
    /// only whole numbers and Swift writes an exponent).
    private static func rate(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 0x1p53 ? String(Int64(value)) : "\(value)"
    }

    /// The C range (a preferred rate of 0 means the maximum).
    var rawRange: tk_frame_rate_range {
        // A preferred rate of exactly 0 would read as "none" in C: send one
        // the C check refuses instead.
        tk_frame_rate_range(minimum: minimum, maximum: maximum, preferred: preferred.map { $0 == 0 ? -1 : $0 } ?? 0)
    }
}
