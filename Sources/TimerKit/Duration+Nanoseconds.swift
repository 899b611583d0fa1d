extension Duration {
    /// The duration in whole nanoseconds, rounded toward zero and saturated to
    /// the range of `Int64` (about ±292 years): how readings, tolerances and
    /// moves of a manual clock reach the C core (deadlines and delays use
    /// ``nanosecondsRoundedUp``).
    ///
    /// - Complexity: O(1), without a 128-bit division: it is on the path of
    ///   every timer scheduled.
    @inlinable
    package var saturatingNanoseconds: Int64 {
        let attoseconds = self.attoseconds
        let magnitude = attoseconds.magnitude
        // 1e9 = 2^9 * 1_953_125. Dividing by 2^9 first leaves a dividend below
        // 2^119 and a divisor below 2^21, so the rest is long division in
        // 64-bit steps by a constant, which the compiler turns into
        // multiplications.
        let shifted = magnitude >> 9
        let divisor: UInt64 = 1_953_125
        let high = UInt64(truncatingIfNeeded: shifted >> 64)
        let low = UInt64(truncatingIfNeeded: shifted)
        if high == 0 {
            // Below 2^73 attoseconds (about 2.6 hours), the common case: one
            // 64-bit division, and a quotient below 2^44.
            let quotient = Int64(low / divisor)
            return attoseconds < 0 ? -quotient : quotient
        }
        let quotientHigh = high / divisor
        let middle = (high % divisor) << 32 | low >> 32        // < 2^53
        let quotientMiddle = middle / divisor                  // < 2^32
        let bottom = (middle % divisor) << 32 | low & 0xFFFF_FFFF
        let quotientLow = bottom / divisor                     // < 2^32
        // The quotient is quotientHigh * 2^64 + quotientMiddle * 2^32 + quotientLow.
        if quotientHigh != 0 { return attoseconds < 0 ? .min : .max }
        let quotient = quotientMiddle << 32 | quotientLow
        if attoseconds < 0 {
            return quotient > UInt64(Int64.max) ? .min : -Int64(quotient)
        }
        return quotient > UInt64(Int64.max) ? .max : Int64(quotient)
    }

    /// The duration in whole nanoseconds, rounded up and saturated to the
    /// range of `Int64`: what a delay or a deadline becomes for the C core,
    /// whose clocks count whole nanoseconds, so that a part of a nanosecond
    /// never makes anything due early.
    @inlinable
    package var nanosecondsRoundedUp: Int64 {
        let truncated = saturatingNanoseconds
        // Rounded toward zero is already rounded up for a negative duration.
        guard truncated < .max, Int128(truncated) &* 1_000_000_000 < attoseconds else {
            return truncated
        }
        return truncated + 1
    }

    /// The duration in whole nanoseconds, rounded down and saturated to the
    /// range of `Int64`: where a manual clock moved to an instant stops, so
    /// that it never goes past the instant.
    @inlinable
    package var nanosecondsRoundedDown: Int64 {
        let truncated = saturatingNanoseconds
        // Rounded toward zero is already rounded down for a positive duration.
        guard truncated > .min, Int128(truncated) &* 1_000_000_000 > attoseconds else {
            return truncated
        }
        return truncated - 1
    }
}
