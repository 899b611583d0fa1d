extension Duration {
    /// The duration in whole nanoseconds, rounded toward zero and saturated to
    /// the range of `Int64` (about ±292 years), which is what the C core takes.
    var saturatingNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return attoseconds < 0 ? .min : .max }
        return total
    }
}
