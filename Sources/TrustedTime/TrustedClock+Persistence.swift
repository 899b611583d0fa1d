
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What ``TrustedClock/restore(from:)`` did.
public enum RestoreOutcome: Sendable, Hashable {
    /// The state was saved in this boot: its samples are in use (with the
    /// clock's own, if it had any).
    case restored(samples: Int)
    /// The state was saved in another boot (the machine rebooted since, so
    /// its boot-clock instants mean nothing now): nothing was restored, and
    /// an unsynced clock reports ``TrustedClock/RefreshReason/savedStateFromAnotherBoot``.
    case fromAnotherBoot
}

extension TrustedClock {
    /// Saves the clock's samples and wall-clock state to `path`, atomically:
    /// written to a temporary file in the same directory, flushed with
    /// `fsync`, renamed over `path`, and the directory flushed. A crash leaves
    /// either the old file or the new one, never a mix.
    ///
    /// The file is small (136 bytes plus 48 per sample) and binary: magic,
    /// format version, length, boot id, the fields, and a CRC-32 (the layout
    /// is documented with `StateFile` in TrustedClock+Persistence.swift).
    ///
    /// - Throws: ``TrustedTimeError/system(_:)`` naming the failed call
    ///   (`open`, `write`, `fsync`, `rename`) and its errno.
    public func save(to path: String) throws(TrustedTimeError) {
        let bytes = encodedState()
        try StateFile.writeAtomically(bytes, to: path)
    }

    /// Restores a state saved by ``save(to:)``.
    ///
    /// Saved in this boot: the samples join the clock's (the best one wins,
    /// as after a sync) and trusted time continues without a new sync, its
    /// error bound grown by the drift allowance for the time since. Saved in
    /// another boot: nothing is restored (``RestoreOutcome/fromAnotherBoot``).
    ///
    /// A file that cannot be used changes nothing and throws:
    /// ``TrustedTimeError/stateFileNotFound(_:)``,
    /// ``TrustedTimeError/notAStateFile`` (another kind of file),
    /// ``TrustedTimeError/stateFileTruncated``,
    /// ``TrustedTimeError/stateFileFromNewerVersion(_:)``,
    /// ``TrustedTimeError/stateFileCorrupt(_:)`` (bad checksum or values), or
    /// ``TrustedTimeError/system(_:)`` for a read error.
    @discardableResult
    public func restore(from path: String) throws(TrustedTimeError) -> RestoreOutcome {
        let bytes = try StateFile.readFile(path)
        return try restore(encoded: bytes)
    }

    /// The saved form of the clock's state.
    func encodedState() -> [UInt8] {
        let boot = readings.boot
        let wall = readings.wall
        let bootID = readings.bootID ?? ""
        let snapshot = state.withLock { $0 }
        return StateFile.encode(
            StateFile.Contents(
                bootID: bootID, savedAtBoot: boot, savedAtWall: wall,
                acceptedOffset: snapshot.acceptedOffset,
                unsyncedBaseline: snapshot.unsyncedBaseline,
                pendingChange: snapshot.pendingChange,
                samples: snapshot.samples))
    }

    /// Restores from the saved form; changes nothing if it throws.
    func restore(encoded bytes: [UInt8]) throws(TrustedTimeError) -> RestoreOutcome {
        let contents = try StateFile.decode(bytes)
        guard let bootID = readings.bootID, !bootID.isEmpty, contents.bootID == bootID else {
            state.withLock { state in
                if state.best == nil { state.staleStateRejected = true }
            }
            return .fromAnotherBoot
        }
        let boot = readings.boot
        guard contents.savedAtBoot <= boot else {
            throw .stateFileCorrupt("saved later than the boot clock's current reading")
        }
        state.withLock { state in
            var merged = state.samples
            for sample in contents.samples where !merged.contains(sample) {
                merged.append(sample)
            }
            merged.sort { $0.receivedAt < $1.receivedAt }
            if merged.count > configuration.maximumSamples {
                merged.removeFirst(merged.count - configuration.maximumSamples)
            }
            state.samples = merged
            state.best = bestSample(of: merged)
            state.lastSyncAt = merged.map(\.receivedAt).max()
            state.staleStateRejected = false
            if state.acceptedOffset == nil { state.acceptedOffset = contents.acceptedOffset }
            if state.unsyncedBaseline == nil { state.unsyncedBaseline = contents.unsyncedBaseline }
            if state.pendingChange == nil { state.pendingChange = contents.pendingChange }
        }
        return .restored(samples: contents.samples.count)
    }
}

/// The file format of a saved ``TrustedClock`` state, version 1.
///
/// All integers little-endian; durations and instants as signed 64-bit
/// nanoseconds.
///
/// ```
/// offset size  field
///   0     4    magic "TKTS"
///   4     2    format version (1)
///   6     2    reserved, 0
///   8     4    body length L (120 + 48 * sample count)
///  12     L    body:
///               0  40  boot id, ASCII, NUL-padded
///              40   8  saved at, boot clock
///              48   8  saved at, wall clock (for information)
///              56   4  flags: 1 accepted offset, 2 unsynced baseline,
///                      4 pending change, 8 pending change has an offset
///              60   4  pending change's cause (0 sync, 1 check, 2 clock step)
///              64   8  accepted offset (wall - trusted)
///              72   8  unsynced baseline (wall - boot)
///              80   8  pending change: change
///              88   8  pending change: offset
///              96   8  pending change: detected at (since the epoch)
///             104   8  pending change: error bound of that reading, -1 if none
///             112   4  sample count N (at most 64)
///             116   4  reserved, 0
///             120  48N samples: server time, sent at, received at,
///                      server resolution, server processing time,
///                      server uncertainty
/// 12+L    4    CRC-32 (IEEE 802.3) of every byte before it
/// ```
enum StateFile {
    static let magic: [UInt8] = Array("TKTS".utf8)
    static let version: UInt16 = 1
    static let headerSize = 12
    static let fixedBodySize = 120
    static let sampleSize = 48
    static let maximumSamples = 64
    static let bootIDSize = 40

    /// What a file holds.
    struct Contents: Equatable {
        var bootID: String
        var savedAtBoot: BootClock.Instant
        var savedAtWall: Duration
        var acceptedOffset: Duration?
        var unsyncedBaseline: Duration?
        var pendingChange: WallClockChange?
        var samples: [TimeSample]
    }

    static func encode(_ contents: Contents) -> [UInt8] {
        var body = Writer()
        var id = Array(contents.bootID.utf8.prefix(bootIDSize))
        id += [UInt8](repeating: 0, count: bootIDSize - id.count)
        body.bytes += id
        body.int64(contents.savedAtBoot.offset)
        body.int64(contents.savedAtWall)
        var flags: UInt32 = 0
        if contents.acceptedOffset != nil { flags |= 1 }
        if contents.unsyncedBaseline != nil { flags |= 2 }
        if let change = contents.pendingChange {
            flags |= 4
            if change.offset != nil { flags |= 8 }
        }
        body.uint32(flags)
        let cause: UInt32 =
            switch contents.pendingChange?.cause {
            case .check: 1
            case .clockStep: 2
            default: 0
            }
        body.uint32(cause)
        body.int64(contents.acceptedOffset ?? .zero)
        body.int64(contents.unsyncedBaseline ?? .zero)
        body.int64(contents.pendingChange?.change ?? .zero)
        body.int64(contents.pendingChange?.offset ?? .zero)
        body.int64(contents.pendingChange?.detectedAt.sinceEpoch ?? .zero)
        body.int64(contents.pendingChange?.detectedAt.errorBound ?? .nanoseconds(-1))
        let samples = contents.samples.suffix(maximumSamples)
        body.uint32(UInt32(samples.count))
        body.uint32(0)
        for sample in samples {
            body.int64(sample.serverTime)
            body.int64(sample.sentAt.offset)
            body.int64(sample.receivedAt.offset)
            body.int64(sample.serverResolution)
            body.int64(sample.serverProcessingTime)
            body.int64(sample.serverUncertainty)
        }
        var file = Writer()
        file.bytes += magic
        file.uint16(version)
        file.uint16(0)
        file.uint32(UInt32(body.bytes.count))
        file.bytes += body.bytes
        file.uint32(crc32(file.bytes))
        return file.bytes
    }

    static func decode(_ bytes: [UInt8]) throws(TrustedTimeError) -> Contents {
        // What kind of file is it?
        let prefix = min(bytes.count, magic.count)
        guard Array(bytes[0..<prefix]) == Array(magic[0..<prefix]) else { throw .notAStateFile }
        guard bytes.count >= headerSize else { throw .stateFileTruncated }
        var header = Reader(bytes[0..<headerSize])
        header.skip(4)
        let fileVersion = header.uint16()
        let reserved = header.uint16()
        let length = Int(header.uint32())
        if fileVersion > version { throw .stateFileFromNewerVersion(fileVersion) }
        if fileVersion == 0 { throw .stateFileCorrupt("format version 0") }
        if reserved != 0 { throw .stateFileCorrupt("reserved header bits set") }
        let maximumLength = fixedBodySize + maximumSamples * sampleSize
        if length > maximumLength { throw .stateFileCorrupt("body length \(length) too large") }
        let total = headerSize + length + 4
        if bytes.count < total { throw .stateFileTruncated }
        if bytes.count > total { throw .stateFileCorrupt("\(bytes.count - total) bytes after the checksum") }
        var trailer = Reader(bytes[(total - 4)..<total])
        guard trailer.uint32() == crc32(bytes[0..<(total - 4)]) else {
            throw .stateFileCorrupt("checksum mismatch")
        }
        guard length >= fixedBodySize, (length - fixedBodySize) % sampleSize == 0 else {
            throw .stateFileCorrupt("body length \(length) is not 120 + 48 * samples")
        }

        var body = Reader(bytes[headerSize..<(headerSize + length)])
        let idBytes = body.take(bootIDSize)
        let idText = idBytes.prefix(while: { $0 != 0 })
        guard idBytes.dropFirst(idText.count).allSatisfy({ $0 == 0 }),
            idText.allSatisfy({ $0 >= 0x20 && $0 < 0x7F })
        else { throw .stateFileCorrupt("boot id is not NUL-padded ASCII") }
        let savedAtBoot = body.int64()
        let savedAtWall = body.int64()
        let flags = body.uint32()
        let causeCode = body.uint32()
        let acceptedOffset = body.int64()
        let baseline = body.int64()
        let change = body.int64()
        let changeOffset = body.int64()
        let detectedAt = body.int64()
        let detectedError = body.int64()
        let count = Int(body.uint32())
        let reserved2 = body.uint32()
        guard flags & ~0xF == 0, reserved2 == 0 else { throw .stateFileCorrupt("unknown flags") }
        guard count == (length - fixedBodySize) / sampleSize else {
            throw .stateFileCorrupt("sample count \(count) does not match the length")
        }
        guard savedAtBoot >= .zero else { throw .stateFileCorrupt("negative boot-clock reading") }
        var pending: WallClockChange?
        if flags & 4 != 0 {
            let cause: WallClockChange.Cause
            switch causeCode {
            case 0: cause = .sync
            case 1: cause = .check
            case 2: cause = .clockStep
            default: throw .stateFileCorrupt("unknown wall-clock change cause \(causeCode)")
            }
            guard detectedError >= .nanoseconds(-1) else {
                throw .stateFileCorrupt("negative error bound")
            }
            let reading =
                detectedError < .zero
                ? TrustedTime(sinceEpoch: detectedAt, errorBound: nil, source: .wallClockFallback)
                : TrustedTime(sinceEpoch: detectedAt, errorBound: detectedError, source: .exact)
            pending = WallClockChange(
                cause: cause, change: change, offset: flags & 8 != 0 ? changeOffset : nil,
                detectedAt: reading)
        } else if flags & 8 != 0 {
            throw .stateFileCorrupt("an offset without a change")
        }
        var samples: [TimeSample] = []
        for _ in 0..<count {
            let sample = TimeSample(
                serverTime: body.int64(), sentAt: BootClock.Instant(offset: body.int64()),
                receivedAt: BootClock.Instant(offset: body.int64()), serverResolution: body.int64(),
                serverProcessingTime: body.int64(), serverUncertainty: body.int64())
            if let problem = sample.problem { throw .stateFileCorrupt("a sample \(problem)") }
            guard sample.receivedAt <= BootClock.Instant(offset: savedAtBoot) else {
                throw .stateFileCorrupt("a sample received after the state was saved")
            }
            samples.append(sample)
        }
        return Contents(
            bootID: String(decoding: idText, as: UTF8.self),
            savedAtBoot: BootClock.Instant(offset: savedAtBoot), savedAtWall: savedAtWall,
            acceptedOffset: flags & 1 != 0 ? acceptedOffset : nil,
            unsyncedBaseline: flags & 2 != 0 ? baseline : nil,
            pendingChange: pending, samples: samples)
    }

    // MARK: Files

    /// The whole file, at most 64 KiB (a larger one is no state of ours).
    static func readFile(_ path: String) throws(TrustedTimeError) -> [UInt8] {
        let limit = 64 * 1024
        var fd: Int32
        repeat {
            fd = open(path, O_RDONLY | O_CLOEXEC)
        } while fd < 0 && errno == EINTR
        if fd < 0 {
            let code = errno
            if code == ENOENT { throw .stateFileNotFound(path) }
            throw .system(CoreError(code: code, function: "open"))
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= limit {
            let got = chunk.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if got < 0 {
                if errno == EINTR { continue }
                throw .system(CoreError(code: errno, function: "read"))
            }
            if got == 0 { break }
            bytes += chunk[0..<got]
        }
        if bytes.count > limit { throw .notAStateFile }
        return bytes
    }

    /// Writes `bytes` to `path` through a temporary file, fsync and rename.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(TrustedTimeError) {
        let temporary = path + ".tmp-\(getpid())-\(temporaryCounter.next())"
        var fd: Int32
        repeat {
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        } while fd < 0 && errno == EINTR
        if fd < 0 { throw .system(CoreError(code: errno, function: "open")) }
        func fail(_ function: String, _ code: Int32) -> TrustedTimeError {
            close(fd)
            unlink(temporary)
            return .system(CoreError(code: code, function: function))
        }
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                systemWrite(fd, raw.baseAddress! + written, raw.count - written)
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw fail("write", errno)
            }
            written += result
        }
        if fsync(fd) != 0 { throw fail("fsync", errno) }
        if close(fd) != 0 {
            let code = errno
            unlink(temporary)
            throw .system(CoreError(code: code, function: "close"))
        }
        if rename(temporary, path) != 0 {
            let code = errno
            unlink(temporary)
            throw .system(CoreError(code: code, function: "rename"))
        }
        // Make the rename itself durable.
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let directoryFD = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }

    private static let temporaryCounter = Counter()

    final class Counter: Sendable {
        private let value = ThreadLocked<UInt64>(0)
        func next() -> UInt64 {
            value.withLock { value in
                value += 1
                return value
            }
        }
    }

    // MARK: Bytes

    struct Writer {
        var bytes: [UInt8] = []

        mutating func uint16(_ value: UInt16) {
            bytes += [UInt8(value & 0xFF), UInt8(value >> 8)]
        }

        mutating func uint32(_ value: UInt32) {
            for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8((value >> shift) & 0xFF)) }
        }

        mutating func int64(_ duration: Duration) {
            let value = UInt64(bitPattern: duration.saturatingNanoseconds)
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8((value >> shift) & 0xFF)) }
        }
    }

    /// Reads from a slice whose length the caller checked.
    struct Reader {
        let bytes: ArraySlice<UInt8>
        var position: Int

        init(_ bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            self.position = bytes.startIndex
        }

        mutating func skip(_ count: Int) { position += count }

        mutating func take(_ count: Int) -> ArraySlice<UInt8> {
            defer { position += count }
            return bytes[position..<(position + count)]
        }

        mutating func uint16() -> UInt16 {
            let b = take(2)
            return UInt16(b[b.startIndex]) | UInt16(b[b.startIndex + 1]) << 8
        }

        mutating func uint32() -> UInt32 {
            var value: UInt32 = 0
            for (index, byte) in take(4).enumerated() { value |= UInt32(byte) << (8 * index) }
            return value
        }

        mutating func int64() -> Duration {
            var value: UInt64 = 0
            for (index, byte) in take(8).enumerated() { value |= UInt64(byte) << (8 * index) }
            return .nanoseconds(Int64(bitPattern: value))
        }
    }

    /// CRC-32 (IEEE 802.3, reflected, as zlib's crc32).
    static func crc32<Bytes: Sequence>(_ bytes: Bytes) -> UInt32 where Bytes.Element == UInt8 {
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

/// `read(2)` (the name is taken by ``StateFile/readFile(_:)``'s neighbours).
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.read(fd, buffer, count)
    #else
    Musl.read(fd, buffer, count)
    #endif
}

/// `write(2)`.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(fd, buffer, count)
    #else
    Musl.write(fd, buffer, count)
    #endif
}
