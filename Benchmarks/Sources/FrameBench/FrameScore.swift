import TimerBench

/// How well a peer kept to its grid.
///
/// Each callback is matched to the nearest grid point (origin + k × period);
/// its jitter is the distance to that point, |actual − target|. A callback
/// whose grid point is more than one past the previous callback's leaves the
/// points between without a frame: those are dropped. A callback whose grid
/// point is not past the previous one's is a duplicate (two frames in one
/// slot). A peer that drifts later by a little every frame shows it as
/// growing jitter, then a drop when it slips a whole slot.
public struct FrameScore: Sendable {
    public var frames: Int
    public var jitter: Summary
    public var dropped: Int64
    public var duplicates: Int

    public init(_ recording: FrameRecording) {
        let period = recording.period
        var jitters: [Int64] = []
        jitters.reserveCapacity(recording.callbacks.count)
        var previous: Int64?
        var dropped: Int64 = 0
        var duplicates = 0
        for time in recording.callbacks {
            let offset = time - recording.origin
            // Nearest grid point; halves go to the later one.
            let slot = floorDivision(offset + period / 2, period)
            jitters.append(abs(offset - slot * period))
            if let previous {
                if slot > previous {
                    dropped += slot - previous - 1
                } else {
                    duplicates += 1
                }
            }
            previous = max(previous ?? slot, slot)
        }
        frames = recording.callbacks.count
        jitter = Summary(jitters)
        self.dropped = dropped
        self.duplicates = duplicates
    }
}

/// a ÷ b rounded down (b > 0).
func floorDivision(_ a: Int64, _ b: Int64) -> Int64 {
    let (quotient, remainder) = a.quotientAndRemainder(dividingBy: b)
    return remainder < 0 ? quotient - 1 : quotient
}
