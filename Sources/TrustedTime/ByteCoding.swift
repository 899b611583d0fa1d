import TimerKit

/// Writes little-endian integers and durations (as signed 64-bit
/// nanoseconds), the encoding of TimerKit's state files.
package struct ByteWriter {
    /// What was written.
    package var bytes: [UInt8] = []

    /// An empty writer.
    package init() {}

    package mutating func uint16(_ value: UInt16) {
        bytes += [UInt8(value & 0xFF), UInt8(value >> 8)]
    }

    package mutating func uint32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8((value >> shift) & 0xFF)) }
    }

    package mutating func int64(_ value: Int64) {
        let bits = UInt64(bitPattern: value)
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8((bits >> shift) & 0xFF)) }
    }

    /// A duration as nanoseconds, saturated to the range of `Int64`.
    package mutating func duration(_ duration: Duration) {
        int64(duration.saturatingNanoseconds)
    }

    /// `text` as ASCII in exactly `width` bytes, cut or NUL-padded.
    package mutating func paddedASCII(_ text: String, width: Int) {
        let prefix = Array(text.utf8.prefix(width))
        bytes += prefix + [UInt8](repeating: 0, count: width - prefix.count)
    }
}

/// Reads what a ``ByteWriter`` wrote, from a slice whose length the caller
/// has checked.
package struct ByteReader {
    private let bytes: ArraySlice<UInt8>
    private var position: Int

    /// A reader at the start of `bytes`.
    package init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.position = bytes.startIndex
    }

    package mutating func take(_ count: Int) -> ArraySlice<UInt8> {
        defer { position += count }
        return bytes[position..<(position + count)]
    }

    package mutating func uint16() -> UInt16 {
        let b = take(2)
        return UInt16(b[b.startIndex]) | UInt16(b[b.startIndex + 1]) << 8
    }

    package mutating func uint32() -> UInt32 {
        var value: UInt32 = 0
        for (index, byte) in take(4).enumerated() { value |= UInt32(byte) << (8 * index) }
        return value
    }

    package mutating func int64() -> Int64 {
        var value: UInt64 = 0
        for (index, byte) in take(8).enumerated() { value |= UInt64(byte) << (8 * index) }
        return Int64(bitPattern: value)
    }

    package mutating func duration() -> Duration {
        .nanoseconds(int64())
    }
}
