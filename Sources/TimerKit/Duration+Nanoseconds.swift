extension Duration {
    /// The duration in whole nanoseconds, rounded toward zero and saturated to
    /// the range of `Int64` (about ±292 years), which is what the C core takes.
    ///
    /// - Complexity: O(1); one 128-bit division.
    @inlinable
    package var saturatingNanoseconds: Int64 {
        let nanoseconds = attoseconds / 1_000_000_000
        if nanoseconds > Int128(Int64.max) { return .max }
        if nanoseconds < Int128(Int64.min) { return .min }
        return Int64(truncatingIfNeeded: nanoseconds)
    }
}
