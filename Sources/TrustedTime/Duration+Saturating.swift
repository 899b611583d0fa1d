/// Arithmetic on durations that holds at the ends of `Duration`'s range
/// instead of trapping: how TrustedTime adds readings, samples and bounds,
/// any of which may come from outside.
extension Duration {
    /// `self + other`, saturating.
    package func addingSaturating(_ other: Duration) -> Duration {
        let (sum, overflow) = attoseconds.addingReportingOverflow(other.attoseconds)
        guard overflow else { return Duration(attoseconds: sum) }
        return Duration(attoseconds: other.attoseconds > 0 ? .max : .min)
    }

    /// `self - other`, saturating.
    package func subtractingSaturating(_ other: Duration) -> Duration {
        let (difference, overflow) = attoseconds.subtractingReportingOverflow(other.attoseconds)
        guard overflow else { return Duration(attoseconds: difference) }
        return Duration(attoseconds: other.attoseconds < 0 ? .max : .min)
    }
}
