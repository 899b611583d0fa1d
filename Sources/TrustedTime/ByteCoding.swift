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

    /// A boot id in exactly `width` bytes: its ``storedBootID(_:width:)``
    /// form, printable ASCII that fits, NUL-padded; all NULs for none.
    package mutating func bootID(_ id: String?, width: Int) {
        let stored = id.map { Array(storedBootID($0, width: width).utf8) } ?? []
        bytes += stored + [UInt8](repeating: 0, count: width - stored.count)
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

    /// A boot id that ``ByteWriter/bootID(_:width:)`` wrote (its stored
    /// form; `.some(nil)` for none), or `nil` if the `width` bytes are not
    /// NUL-padded printable ASCII.
    package mutating func bootID(width: Int) -> String?? {
        let field = take(width)
        let text = field.prefix(while: { $0 != 0 })
        guard field.dropFirst(text.count).allSatisfy({ $0 == 0 }),
            text.allSatisfy({ $0 >= 0x20 && $0 < 0x7F })
        else { return nil }
        return .some(text.isEmpty ? nil : String(decoding: text, as: UTF8.self))
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

/// A boot id as a state file keeps it in a field of `width` bytes (at least
/// 33) of printable ASCII. An id that is printable ASCII, fits, does not
/// start with `#` and is not empty is kept as it is (a Linux boot id is 36
/// such characters); any other (the empty one too: an empty field is no id)
/// is kept as `#` and 32 lowercase hex digits of its UTF-8 bytes'
/// 128-bit FNV-1a hash, so that any string works as a boot id and two ids
/// match after saving exactly when they are equal (but for a 2^-128 chance).
/// Such a form is kept as it is: the function gives its own results back.
package func storedBootID(_ id: String, width: Int) -> String {
    let bytes = Array(id.utf8)
    let printable = bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    let isHashForm = bytes.count == 33 && bytes.first == UInt8(ascii: "#")
        && bytes.dropFirst().allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    if !bytes.isEmpty && printable && bytes.count <= width
        && (bytes.first != UInt8(ascii: "#") || isHashForm)
    {
        return id
    }
    // FNV-1a, 128 bits: the offset basis and prime of the published
    // parameters.
    var hash: UInt128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d
    let prime: UInt128 = 0x0000_0000_0100_0000_0000_0000_0000_013b
    for byte in bytes {
        hash ^= UInt128(byte)
        hash = hash &* prime
    }
    let hex = String(hash, radix: 16)
    return "#" + String(repeating: "0", count: 32 - hex.count) + hex
}
