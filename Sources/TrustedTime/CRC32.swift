/// CRC-32 (IEEE 802.3, reflected, as zlib's `crc32`): the checksum of
/// TimerKit's state files.
package enum CRC32 {
    /// The checksum of `bytes`.
    ///
    /// - Complexity: O(n), bit by bit (state files are a few hundred bytes).
    package static func checksum<Bytes: Sequence>(_ bytes: Bytes) -> UInt32
    where Bytes.Element == UInt8 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 {
                crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1)))
            }
        }
        return ~crc
    }
}
