import Testing
@testable import TimerKit

// Duration.saturatingNanoseconds: the conversion every schedule makes, done
// without a 128-bit division, against the plain division it replaces; and
// nanosecondsRoundedUp, what deadlines and delays become, and
// nanosecondsRoundedDown, where a manual clock moved to an instant stops,
// against the rounded divisions.
@Suite("Duration to nanoseconds")
struct DurationNanosecondsTests {
    /// The definition: rounded toward zero, saturated to Int64.
    static func reference(_ attoseconds: Int128) -> Int64 {
        let nanoseconds = attoseconds / 1_000_000_000
        if nanoseconds > Int128(Int64.max) { return .max }
        if nanoseconds < Int128(Int64.min) { return .min }
        return Int64(nanoseconds)
    }

    /// Rounded up, saturated to Int64.
    static func referenceRoundedUp(_ attoseconds: Int128) -> Int64 {
        var nanoseconds = attoseconds / 1_000_000_000
        if attoseconds % 1_000_000_000 > 0 { nanoseconds += 1 }
        if nanoseconds > Int128(Int64.max) { return .max }
        if nanoseconds < Int128(Int64.min) { return .min }
        return Int64(nanoseconds)
    }

    /// Rounded down, saturated to Int64.
    static func referenceRoundedDown(_ attoseconds: Int128) -> Int64 {
        var nanoseconds = attoseconds / 1_000_000_000
        if attoseconds % 1_000_000_000 < 0 { nanoseconds -= 1 }
        if nanoseconds > Int128(Int64.max) { return .max }
        if nanoseconds < Int128(Int64.min) { return .min }
        return Int64(nanoseconds)
    }

    static func check(_ value: Int128) {
        let duration = Duration(attoseconds: value)
        #expect(duration.saturatingNanoseconds == reference(value), "\(value) attoseconds")
        #expect(duration.nanosecondsRoundedUp == referenceRoundedUp(value), "\(value) attoseconds, rounded up")
        #expect(duration.nanosecondsRoundedDown == referenceRoundedDown(value), "\(value) attoseconds, rounded down")
    }

    @Test("edges: zero, a part of a nanosecond, whole seconds, the ends of Int64 and of Duration")
    func edges() {
        let nano = Int128(1_000_000_000)
        var values: [Int128] = [
            0, 1, -1, nano - 1, -(nano - 1), nano, -nano, nano + 1, -nano - 1,
            Int128(Int64.max) * nano, Int128(Int64.max) * nano + nano - 1,
            Int128(Int64.max) * nano + nano, Int128(Int64.min) * nano,
            Int128(Int64.min) * nano - 1, Int128(Int64.min) * nano - nano, Int128(Int64.min) * nano + 1,
            Int128.max, Int128.min, Int128.max - 1, Int128.min + 1,
        ]
        for shift in 0..<127 {
            values.append(Int128(1) << shift)
            values.append(-(Int128(1) << shift))
            values.append((Int128(1) << shift) - 1)
        }
        for value in values { Self.check(value) }
        #expect(Duration.seconds(-1.5).saturatingNanoseconds == -1_500_000_000)
        #expect(Duration.nanoseconds(-1).saturatingNanoseconds == -1)
        #expect((Duration.nanoseconds(3) / 2).nanosecondsRoundedUp == 2)
        #expect((Duration.nanoseconds(-3) / 2).nanosecondsRoundedUp == -1)
        #expect((Duration.nanoseconds(3) / 2).nanosecondsRoundedDown == 1)
        #expect((Duration.nanoseconds(-3) / 2).nanosecondsRoundedDown == -2)
        #expect(Duration(attoseconds: Int128(Int64.max) * 1_000_000_000 + 1).nanosecondsRoundedUp == .max)
    }

    @Test("random durations of every size agree with the 128-bit divisions")
    func random() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        for _ in 0..<200_000 {
            let bits = Int(next() % 128)
            let raw = Int128(bitPattern: UInt128(next()) << 64 | UInt128(next()))
            let value = bits == 127 ? raw : raw >> (127 - bits)
            Self.check(value)
        }
    }
}
