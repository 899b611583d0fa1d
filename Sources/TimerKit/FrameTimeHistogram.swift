/// Frame times in a fixed number of buckets, for percentiles without an
/// allocation per frame.
///
/// Log-linear buckets: times below 256 ns have one bucket each; above, each
/// power of two is split into 128 buckets, so a bucket's width is less than
/// 1/128 (0.8 %) of its values. A percentile is reported as its bucket's
/// lowest value, except in the buckets of the smallest and the largest time
/// recorded, which report those times (a bucket that holds both reports the
/// smallest, but for the top rank): a run of equal frame times, or of a
/// steady time and one hitch more than a bucket longer, reports them
/// exactly. The buckets reach `Int64.max` (55 powers of two above 256 ns), so
/// every time is within a bucket.
struct FrameTimeHistogram: Sendable {
    private static let exactBelow: Int64 = 256
    private static let subBuckets = 128
    private static let octaves = 55
    static let bucketCount = 256 + octaves * 128

    /// As wide as `count`: a bucket that stopped short of its times (a run
    /// of one frame time billions of frames long) would put the ranks past
    /// it in later buckets.
    private(set) var counts: [UInt64]
    private(set) var count: UInt64 = 0
    private(set) var smallest: Int64 = .max
    private(set) var largest: Int64 = 0

    init() {
        counts = [UInt64](repeating: 0, count: Self.bucketCount)
    }

    static func bucket(of nanoseconds: Int64) -> Int {
        let value = max(0, nanoseconds)
        if value < exactBelow { return Int(value) }
        let shift = (64 - value.leadingZeroBitCount) - 8  // >= 1
        let mantissa = Int(value >> shift)  // in [128, 256)
        let index = 256 + (shift - 1) * subBuckets + (mantissa - 128)
        return min(index, bucketCount - 1)
    }

    static func lowestValue(of bucket: Int) -> Int64 {
        if bucket < 256 { return Int64(bucket) }
        let shift = (bucket - 256) / subBuckets + 1
        let mantissa = Int64((bucket - 256) % subBuckets + 128)
        return mantissa << shift
    }

    /// Counts one time. No allocation (the buckets are made in `init`, and
    /// the array is not shared while recording).
    mutating func record(_ nanoseconds: Int64) {
        record(nanoseconds, times: 1)
    }

    /// Counts `times` frames of one time (`count` stops at `UInt64.max`,
    /// and the bucket with it).
    mutating func record(_ nanoseconds: Int64, times: UInt64) {
        let index = Self.bucket(of: nanoseconds)
        let added = min(times, .max - count)
        guard added > 0 else { return }
        counts[index] += added
        count += added
        smallest = min(smallest, max(0, nanoseconds))
        largest = max(largest, nanoseconds)
    }

    /// The time at or below which a fraction `p` (0…1) of the times lie;
    /// `nil` with no time recorded.
    func percentile(_ p: Double) -> Int64? {
        guard count > 0 else { return nil }
        let fraction = min(max(p, 0), 1)
        // A count past 2^53 is rounded as a Double, up to 2^64 for the
        // largest: the rank stays within 1...count.
        let scaled = (fraction * Double(count)).rounded(.up)
        let rank = scaled >= 0x1p64 ? count : min(count, max(1, UInt64(scaled)))
        var seen: UInt64 = 0
        for (index, bucketCount) in counts.enumerated() where bucketCount > 0 {
            seen += bucketCount
            guard seen >= rank else { continue }
            // The extremes are known exactly: the smallest time is the first
            // in its bucket, the largest the last in its own.
            // A bucket that holds both gives the smallest below the top rank.
            let holdsLargest = index == Self.bucket(of: largest)
            if index == Self.bucket(of: smallest) && (rank < count || !holdsLargest) { return smallest }
            if holdsLargest { return largest }
            return Self.lowestValue(of: index)
        }
        return largest
    }

    /// Empties the histogram, keeping its buckets.
    mutating func reset() {
        counts.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        count = 0
        smallest = .max
        largest = 0
    }
}
