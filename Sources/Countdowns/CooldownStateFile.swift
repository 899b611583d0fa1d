import TimerKit
import TrustedTime

/// The saved form of ``Cooldowns``: a `StateFile` of kind "TKCD", format
/// version 2 (TrustedTime's envelope: magic, version, length, CRC-32, written
/// atomically). Version 1, the same layout, is read too (see `envelope`).
///
/// All integers little-endian; instants and durations as signed 64-bit
/// nanoseconds. The body:
///
/// ```
/// offset size  field
///   0    40    boot id, ASCII, NUL-padded
///  40     8    saved at, boot clock
///  48     4    entry count N (at most 1024)
///  52     4    reserved, 0
///  56   ...    N entries, each:
///               0   2  key length K (1...256)
///               2   2  flags: 1 the trusted end is known
///               4   8  end, boot clock
///              12   8  duration (as started)
///              20   8  end, server time since the epoch (if flag 1): the
///                       latest it can be (the reading plus its error bound)
///              28   K  key, UTF-8
/// ```
enum CooldownStateFile {
    static let fixedBodySize = 56
    static let entrySize = 28
    static let maximumKeyLength = 256
    static let maximumEntries = 1024
    static let bootIDSize = 40

    /// Version 2 saves a server-time end as the latest the end can be (the
    /// reading plus its error bound); version 1 saved the reading alone, so
    /// its server-time ends are not read: such a cooldown counts from the
    /// time it had left after a reboot, which never ends it early.
    static let envelope = StateFile(
        magic: "TKCD", version: 2,
        maximumBodyLength: fixedBodySize + maximumEntries * (entrySize + maximumKeyLength))

    /// A larger file is no state of ours.
    static let maximumFileSize = 12 + envelope.maximumBodyLength + 4

    struct Entry: Equatable {
        var key: String
        var end: BootClock.Instant
        var duration: Duration
        var trustedEnd: Duration?
    }

    struct Contents: Equatable {
        /// The boot id (written in its stored form, which is what a decoded
        /// file holds); `nil` for none.
        var bootID: String?
        var savedAt: BootClock.Instant
        var entries: [Entry]
    }

    static func encode(_ contents: Contents) -> [UInt8] {
        var body = ByteWriter()
        body.bootID(contents.bootID, width: bootIDSize)
        body.duration(contents.savedAt.offset)
        // Cooldowns.write refuses more; a larger list is a programming error.
        precondition(contents.entries.count <= maximumEntries, "more cooldowns than a state file holds")
        let entries = contents.entries
        body.uint32(UInt32(entries.count))
        body.uint32(0)
        for entry in entries {
            let key = Array(entry.key.utf8.prefix(maximumKeyLength))
            body.uint16(UInt16(key.count))
            body.uint16(entry.trustedEnd == nil ? 0 : 1)
            body.duration(entry.end.offset)
            body.duration(entry.duration)
            body.duration(entry.trustedEnd ?? .zero)
            body.bytes += key
        }
        return envelope.encode(body: body.bytes)
    }

    static func decode(_ bytes: [UInt8]) throws(CountdownError) -> Contents {
        if bytes.count > maximumFileSize { throw .notAStateFile }
        let (version, bodyBytes): (UInt16, ArraySlice<UInt8>)
        do {
            (version, bodyBytes) = try envelope.decode(bytes)
        } catch {
            switch error {
            case .notThisKind: throw .notAStateFile
            case .truncated: throw .stateFileTruncated
            case .newerVersion(let version): throw .stateFileFromNewerVersion(version)
            case .corrupt(let why): throw .stateFileCorrupt(why)
            }
        }
        guard bodyBytes.count >= fixedBodySize else {
            throw .stateFileCorrupt("body length \(bodyBytes.count) is shorter than \(fixedBodySize)")
        }
        var body = ByteReader(bodyBytes)
        guard let bootID = body.bootID(width: bootIDSize) else {
            throw .stateFileCorrupt("boot id is not NUL-padded ASCII")
        }
        let savedAt = body.duration()
        let count = Int(body.uint32())
        let reserved = body.uint32()
        guard reserved == 0 else { throw .stateFileCorrupt("reserved bits set") }
        guard count <= maximumEntries else { throw .stateFileCorrupt("\(count) entries") }
        guard savedAt >= .zero else { throw .stateFileCorrupt("negative boot-clock reading") }
        var left = bodyBytes.count - fixedBodySize
        var entries: [Entry] = []
        var keys: Set<CooldownKey> = []
        for index in 0..<count {
            guard left >= entrySize else { throw .stateFileCorrupt("entry \(index) runs past the body") }
            let keyLength = Int(body.uint16())
            let flags = body.uint16()
            let end = body.duration()
            let duration = body.duration()
            let trustedEnd = body.duration()
            left -= entrySize
            guard keyLength >= 1, keyLength <= maximumKeyLength, keyLength <= left else {
                throw .stateFileCorrupt("entry \(index): key length \(keyLength)")
            }
            guard flags & ~1 == 0 else { throw .stateFileCorrupt("entry \(index): unknown flags") }
            guard duration > .zero, end >= .zero else {
                throw .stateFileCorrupt("entry \(index): impossible end or duration")
            }
            guard let key = String(validating: body.take(keyLength), as: UTF8.self) else {
                throw .stateFileCorrupt("entry \(index): the key is not UTF-8")
            }
            left -= keyLength
            // A save writes each key once: a key repeated (byte for byte, as
            // keys are told apart) is not what a save wrote.
            guard keys.insert(CooldownKey(key)).inserted else {
                throw .stateFileCorrupt("entry \(index): a key that an earlier entry has")
            }
            entries.append(Entry(
                key: key, end: BootClock.Instant(offset: end), duration: duration,
                trustedEnd: flags & 1 != 0 && version >= 2 ? trustedEnd : nil))
        }
        guard left == 0 else { throw .stateFileCorrupt("\(left) bytes after the last entry") }
        return Contents(
            bootID: bootID, savedAt: BootClock.Instant(offset: savedAt),
            entries: entries)
    }
}
