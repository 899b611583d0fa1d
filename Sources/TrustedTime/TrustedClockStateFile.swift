import TimerKit

/// The saved form of a ``TrustedClock``'s state: a ``StateFile`` of kind
/// "TKTS", format version 1.
///
/// All integers little-endian; durations and instants as signed 64-bit
/// nanoseconds. The body:
///
/// ```
/// offset size  field
///   0    40    boot id, ASCII, NUL-padded
///  40     8    saved at, boot clock
///  48     8    saved at, wall clock (for information)
///  56     4    flags: 1 accepted offset, 2 unsynced baseline,
///              4 pending change, 8 pending change has an offset
///  60     4    pending change's cause (0 sync, 1 check, 2 clock step)
///  64     8    accepted offset (wall - trusted)
///  72     8    unsynced baseline (wall - boot)
///  80     8    pending change: change
///  88     8    pending change: offset
///  96     8    pending change: detected at (since the epoch)
/// 104     8    pending change: error bound of that reading, -1 if none
/// 112     4    sample count N (at most 64)
/// 116     4    reserved, 0
/// 120   48N    samples: server time, sent at, received at, server
///              resolution, server processing time, server uncertainty
/// ```
enum TrustedClockStateFile {
    static let fixedBodySize = 120
    static let sampleSize = 48
    static let maximumSamples = 64
    static let bootIDSize = 40

    static let envelope = StateFile(
        magic: "TKTS", version: 1, maximumBodyLength: fixedBodySize + maximumSamples * sampleSize)

    /// A larger file is no state of ours (the reader stops there).
    static let maximumFileSize = 64 * 1024

    /// What a file holds.
    struct Contents: Equatable {
        /// The boot id (written in its stored form, which is what a decoded
        /// file holds); `nil` for none.
        var bootID: String?
        var savedAtBoot: BootClock.Instant
        var savedAtWall: Duration
        var acceptedOffset: Duration?
        var unsyncedBaseline: Duration?
        var pendingChange: WallClockChange?
        var samples: [TimeSample]
    }

    static func encode(_ contents: Contents) -> [UInt8] {
        var body = ByteWriter()
        body.bootID(contents.bootID, width: bootIDSize)
        body.duration(contents.savedAtBoot.offset)
        body.duration(contents.savedAtWall)
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
        body.duration(contents.acceptedOffset ?? .zero)
        body.duration(contents.unsyncedBaseline ?? .zero)
        body.duration(contents.pendingChange?.change ?? .zero)
        body.duration(contents.pendingChange?.offset ?? .zero)
        body.duration(contents.pendingChange?.detectedAt.sinceEpoch ?? .zero)
        body.duration(contents.pendingChange?.detectedAt.errorBound ?? .nanoseconds(-1))
        let samples = contents.samples.suffix(maximumSamples)
        body.uint32(UInt32(samples.count))
        body.uint32(0)
        for sample in samples {
            body.duration(sample.serverTime)
            body.duration(sample.sentAt.offset)
            body.duration(sample.receivedAt.offset)
            body.duration(sample.serverResolution)
            body.duration(sample.serverProcessingTime)
            body.duration(sample.serverUncertainty)
        }
        return envelope.encode(body: body.bytes)
    }

    static func decode(_ bytes: [UInt8]) throws(TrustedTimeError) -> Contents {
        if bytes.count > maximumFileSize { throw .notAStateFile }
        let bodyBytes: ArraySlice<UInt8>
        do {
            bodyBytes = try envelope.decode(bytes).body
        } catch {
            switch error {
            case .notThisKind: throw .notAStateFile
            case .truncated: throw .stateFileTruncated
            case .newerVersion(let version): throw .stateFileFromNewerVersion(version)
            case .corrupt(let why): throw .stateFileCorrupt(why)
            }
        }
        let length = bodyBytes.count
        guard length >= fixedBodySize, (length - fixedBodySize) % sampleSize == 0 else {
            throw .stateFileCorrupt("body length \(length) is not 120 + 48 * samples")
        }

        var body = ByteReader(bodyBytes)
        guard let bootID = body.bootID(width: bootIDSize) else {
            throw .stateFileCorrupt("boot id is not NUL-padded ASCII")
        }
        let savedAtBoot = body.duration()
        let savedAtWall = body.duration()
        let flags = body.uint32()
        let causeCode = body.uint32()
        let acceptedOffset = body.duration()
        let baseline = body.duration()
        let change = body.duration()
        let changeOffset = body.duration()
        let detectedAt = body.duration()
        let detectedError = body.duration()
        let count = Int(body.uint32())
        let reserved = body.uint32()
        guard flags & ~0xF == 0, reserved == 0 else { throw .stateFileCorrupt("unknown flags") }
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
                serverTime: body.duration(), sentAt: BootClock.Instant(offset: body.duration()),
                receivedAt: BootClock.Instant(offset: body.duration()),
                serverResolution: body.duration(),
                serverProcessingTime: body.duration(), serverUncertainty: body.duration())
            if let problem = sample.problem { throw .stateFileCorrupt("a sample that cannot be used: \(problem)") }
            guard sample.receivedAt <= BootClock.Instant(offset: savedAtBoot) else {
                throw .stateFileCorrupt("a sample received after the state was saved")
            }
            samples.append(sample)
        }
        return Contents(
            bootID: bootID,
            savedAtBoot: BootClock.Instant(offset: savedAtBoot), savedAtWall: savedAtWall,
            acceptedOffset: flags & 1 != 0 ? acceptedOffset : nil,
            unsyncedBaseline: flags & 2 != 0 ? baseline : nil,
            pendingChange: pending, samples: samples)
    }
}
