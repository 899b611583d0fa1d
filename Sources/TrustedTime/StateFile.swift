/// The envelope of TimerKit's small state files: what kind of file it is,
/// which version of the format, how long, and a checksum over all of it.
///
/// ```
/// offset size  field
///   0     4    magic (four ASCII letters naming the kind of state)
///   4     2    format version (from 1)
///   6     2    reserved, 0
///   8     4    body length L
///  12     L    body (the kind's own format)
/// 12+L    4    CRC-32 (IEEE 802.3) of every byte before it
/// ```
///
/// All integers little-endian. The header (the first 12 bytes) is the same
/// in every format version, its reserved bits 0; what follows it may
/// change. Reading checks, in order: the magic and the reserved bits
/// (another kind of file), the header's length, the version (a newer format
/// than this library reads), the body length against the
/// kind's maximum, the file's length, and the checksum; only then is the
/// body given to the kind's decoder.
package struct StateFile: Sendable {
    /// Why a file cannot be read as this kind of state.
    package enum Problem: Error, Equatable {
        /// Not this kind of file at all (another magic, or the header's
        /// reserved bits set).
        case notThisKind
        /// It ends before the length it announces.
        case truncated
        /// The format version is newer than this library reads.
        case newerVersion(UInt16)
        /// The file has the format but cannot be used; the text says why.
        case corrupt(String)
    }

    /// The four ASCII letters that start every file of this kind.
    package let magic: [UInt8]
    /// The format version written, and the newest one read.
    package let version: UInt16
    /// The largest body this kind ever writes.
    package let maximumBodyLength: Int

    static let headerSize = 12

    /// A kind of state file.
    package init(magic: String, version: UInt16, maximumBodyLength: Int) {
        precondition(magic.utf8.count == 4 && version >= 1)
        self.magic = Array(magic.utf8)
        self.version = version
        self.maximumBodyLength = maximumBodyLength
    }

    /// The whole file for `body`.
    package func encode(body: [UInt8]) -> [UInt8] {
        var file = ByteWriter()
        file.bytes += magic
        file.uint16(version)
        file.uint16(0)
        file.uint32(UInt32(body.count))
        file.bytes += body
        file.uint32(CRC32.checksum(file.bytes))
        return file.bytes
    }

    /// The version and the body of a file of this kind.
    package func decode(_ bytes: [UInt8]) throws(Problem) -> (version: UInt16, body: ArraySlice<UInt8>) {
        let prefix = min(bytes.count, magic.count)
        guard Array(bytes[0..<prefix]) == Array(magic[0..<prefix]) else { throw .notThisKind }
        guard bytes.count >= Self.headerSize else { throw .truncated }
        var header = ByteReader(bytes[magic.count..<Self.headerSize])
        let fileVersion = header.uint16()
        let reserved = header.uint16()
        let length = Int(header.uint32())
        // The header is the same in every version, its reserved bits 0: a
        // file with them set only starts with the magic (a text file, say),
        // and is not one of this kind, which no save replaces; checked
        // first, so that it is not taken for a newer format's either.
        if reserved != 0 { throw .notThisKind }
        if fileVersion > version { throw .newerVersion(fileVersion) }
        if fileVersion == 0 { throw .corrupt("format version 0") }
        if length > maximumBodyLength { throw .corrupt("body length \(length) too large") }
        let total = Self.headerSize + length + 4
        if bytes.count < total { throw .truncated }
        if bytes.count > total { throw .corrupt("\(bytes.count - total) bytes after the checksum") }
        var trailer = ByteReader(bytes[(total - 4)..<total])
        guard trailer.uint32() == CRC32.checksum(bytes[0..<(total - 4)]) else {
            throw .corrupt("checksum mismatch")
        }
        return (fileVersion, bytes[Self.headerSize..<(Self.headerSize + length)])
    }
}
