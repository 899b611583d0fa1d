import Glibc
import Synchronization
import Testing

import TimerKit
@testable import TrustedTime

/// Saving and restoring a TrustedClock: a restart of the process in the same
/// boot, a reboot, and files that cannot be used.
@Suite("TrustedClock persistence")
struct TrustedClockPersistenceTests {
    /// A synced clock on `readings`, with three samples and a wall clock an
    /// hour behind.
    func syncedClock(_ readings: ScriptedReadings) throws -> TrustedClock {
        let clock = TrustedClock(readings: readings)
        for outbound in [30, 4, 12] {
            try clock.sync(
                with: readings.exchange(
                    outbound: .milliseconds(outbound), inbound: .milliseconds(outbound)))
            readings.advance(by: .seconds(1))
        }
        return clock
    }

    @Test("a restart in the same boot: trusted time continues without a sync")
    func restartSameBoot() throws {
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        let path = directory.file("trusted.state")
        let readings = ScriptedReadings(wallError: .seconds(-3600))
        let clock = try syncedClock(readings)
        let before = clock.now
        try clock.save(to: path)
        #expect(directory.entries() == ["trusted.state"])  // no temporary file left

        // The process is gone for ten minutes, during which the wall clock is
        // set back another hour; a new process restores.
        readings.advance(by: .seconds(300))
        readings.stepWall(by: .seconds(-3600))
        readings.suspend(for: .seconds(300))
        let restarted = TrustedClock(readings: readings)
        #expect(restarted.refreshReason == .neverSynced)
        #expect(try restarted.restore(from: path) == .restored(samples: 3))
        #expect(restarted.isSynced)
        #expect(restarted.samples == clock.samples)
        #expect(restarted.bestSample == clock.bestSample)
        let now = restarted.now
        #expect(now.sinceEpoch == readings.truth)
        #expect(now.sinceEpoch - before.sinceEpoch == .seconds(600))
        #expect(now.errorBound! > before.errorBound!)
        #expect(now.source == .synced(since: clock.bestSample!.receivedAt))
        // The hour-behind offset was accepted before the save; the extra hour
        // is a change.
        let change = try #require(restarted.checkWallClock())
        #expect(change.change == .seconds(-3600))
        #expect(change.offset == .seconds(-7200))
    }

    @Test("a clock that keeps more samples than a file holds saves the one in use, and a restore reads the same time")
    func moreSamplesThanTheFileHolds() throws {
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        let path = directory.file("trusted.state")
        let readings = ScriptedReadings()
        let kept = TrustedClockStateFile.maximumSamples + 6
        let clock = TrustedClock(configuration: .init(maximumSamples: kept), readings: readings)
        // The first sample, a 1 ms round trip, stays the best: the others
        // have 400 ms round trips and a server 150 ms ahead.
        try clock.sync(with: readings.exchange(outbound: .microseconds(500), inbound: .microseconds(500)))
        let best = try #require(clock.bestSample)
        for _ in 1..<kept {
            try clock.sync(
                with: readings.exchange(
                    outbound: .milliseconds(200), inbound: .milliseconds(200), serverError: .milliseconds(150)))
        }
        #expect(clock.samples.count == kept && clock.bestSample == best)
        let before = clock.now
        try clock.save(to: path)

        let restarted = TrustedClock(configuration: .init(maximumSamples: kept), readings: readings)
        let file = TrustedClockStateFile.maximumSamples
        #expect(try restarted.restore(from: path) == .restored(samples: file))
        #expect(restarted.bestSample == best)
        #expect(restarted.samples == [best] + clock.samples.suffix(file - 1))
        #expect(restarted.now == before)
    }

    @Test(
        "any string is a boot id: a restart in the same boot restores, another id does not",
        arguments: ["bööt", "tab\tid", String(repeating: "x", count: 41), "#abc", "b", ""])
    func unusualBootID(_ bootID: String) throws {
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        let path = directory.file("trusted.state")
        let readings = ScriptedReadings(bootID: bootID)
        let clock = try syncedClock(readings)
        try clock.save(to: path)
        readings.advance(by: .seconds(60))
        #expect(try TrustedClock(readings: readings).restore(from: path) == .restored(samples: 3))
        // An id that shares the first 40 bytes is another boot.
        let other = ScriptedReadings(bootID: bootID + "2")
        #expect(try TrustedClock(readings: other).restore(from: path) == .fromAnotherBoot)
    }

    @Test("a reboot: the saved state is not trusted, and the clock asks for a sync")
    func reboot() throws {
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        let path = directory.file("trusted.state")
        let readings = ScriptedReadings()
        let clock = try syncedClock(readings)
        try clock.save(to: path)
        readings.reboot(downtime: .seconds(3600), bootID: "6f1f5b7e-0000-4000-8000-000000000002")
        let afterReboot = TrustedClock(readings: readings)
        #expect(try afterReboot.restore(from: path) == .fromAnotherBoot)
        #expect(!afterReboot.isSynced)
        #expect(afterReboot.samples.isEmpty)
        #expect(afterReboot.now.source == .wallClockFallback)
        #expect(afterReboot.refreshReason == .savedStateFromAnotherBoot)
        #expect(afterReboot.needsSync)
        // A sync ends it.
        try afterReboot.sync(
            with: readings.exchange(outbound: .milliseconds(1), inbound: .milliseconds(1)))
        #expect(afterReboot.refreshReason == nil)
        #expect(afterReboot.now.sinceEpoch == readings.truth)

        // Without a boot id the state cannot be matched to this boot either.
        let noID = ScriptedReadings(bootID: nil)
        #expect(try TrustedClock(readings: noID).restore(from: path) == .fromAnotherBoot)
        // Saved without one, it is no boot's, not even an empty id's.
        try syncedClock(noID).save(to: path)
        #expect(try TrustedClock(readings: ScriptedReadings(bootID: "")).restore(from: path) == .fromAnotherBoot)
    }

    @Test("the state round-trips every field, including a pending wall-clock change")
    func roundTrip() throws {
        let readings = ScriptedReadings()
        let clock = try syncedClock(readings)
        readings.stepWall(by: .seconds(-90))
        let change = try #require(clock.checkWallClock())
        let bytes = clock.encodedState()
        #expect(bytes.count == 12 + 120 + 3 * 48 + 4)
        let contents = try TrustedClockStateFile.decode(bytes)
        #expect(contents.bootID == readings.bootID)
        #expect(contents.samples == clock.samples)
        #expect(contents.savedAtBoot == readings.boot)
        #expect(contents.savedAtWall == readings.wall)
        #expect(contents.acceptedOffset == .seconds(-90))
        #expect(contents.pendingChange?.change == change.change)
        #expect(contents.pendingChange?.offset == change.offset)
        #expect(contents.pendingChange?.cause == .check)
        #expect(TrustedClockStateFile.encode(contents) == bytes)

        let restarted = TrustedClock(readings: readings)
        #expect(try restarted.restore(encoded: bytes) == .restored(samples: 3))
        guard case .wallClockChanged(let restoredChange) = restarted.refreshReason else {
            Issue.record("the pending change was not restored: \(String(describing: restarted.refreshReason))")
            return
        }
        #expect(restoredChange.change == .seconds(-90))
        #expect(restarted.checkWallClock() == nil)  // already accepted
    }

    @Test("a restore that puts another sample in use moves the accepted offset with it, as a sync does: the wall clock did not change")
    func restoreMovesTheAcceptedOffset() throws {
        let readings = ScriptedReadings()
        // A server 3 s ahead of the truth and of the wall clock, over a
        // 10 ms round trip: its offset (-3 s) is accepted, then saved.
        let first = TrustedClock(readings: readings)
        try first.sync(with: readings.exchange(outbound: .milliseconds(5), inbound: .milliseconds(5), serverError: .seconds(3)))
        let saved = first.encodedState()
        readings.advance(by: .seconds(1))
        // Another process syncs with a server that agrees with the wall
        // clock, over 400 ms, then restores: the saved sample is the better
        // one, and server time moves 3 s ahead with it.
        let second = TrustedClock(readings: readings)
        try second.sync(with: readings.exchange(outbound: .milliseconds(200), inbound: .milliseconds(200)))
        #expect(second.checkWallClock() == nil)
        #expect(try second.restore(encoded: saved) == .restored(samples: 1))
        #expect(second.bestSample == first.bestSample)
        #expect(second.now.sinceEpoch == readings.truth + .seconds(3))
        // Nobody touched the wall clock: no change, no sync asked for, as
        // with the same two samples taken by syncs.
        #expect(second.checkWallClock() == nil)
        #expect(second.refreshReason == nil)
        // A step of the wall clock after it is still seen, against the moved offset.
        readings.stepWall(by: .seconds(-60))
        #expect(second.checkWallClock()?.change == .seconds(-60))
    }

    @Test("a file saved before a sync does not bring back the wall-clock change that sync ended")
    func pendingChangeEndedBySync() throws {
        let readings = ScriptedReadings()
        let clock = try syncedClock(readings)
        // A reply from before the save that this clock never took.
        let early = readings.exchange(outbound: .milliseconds(20), inbound: .milliseconds(20))
        readings.stepWall(by: .seconds(100))
        #expect(clock.checkWallClock() != nil)
        let saved = clock.encodedState()
        readings.advance(by: .seconds(1))
        try clock.sync(with: readings.exchange(outbound: .milliseconds(5), inbound: .milliseconds(5)))
        #expect(clock.refreshReason == nil)
        #expect(try clock.restore(encoded: saved) == .restored(samples: 3))
        #expect(clock.refreshReason == nil)
        // A fresh clock still gets it back, and so does one whose only
        // sample is from before the save.
        for fresh in [true, false] {
            let restarted = TrustedClock(readings: readings)
            if !fresh { try restarted.sync(with: early) }
            #expect(try restarted.restore(encoded: saved) == .restored(samples: 3))
            guard case .wallClockChanged(let change) = restarted.refreshReason else {
                Issue.record("the pending change was not restored: \(String(describing: restarted.refreshReason))")
                continue
            }
            #expect(change.change == .seconds(100))
        }
    }

    @Test("a sync on another thread while the clock reads the boot clock: the save makes a file that restores, and the time since the sync is not negative")
    func syncDuringSave() throws {
        let readings = ScriptedReadings()
        let clock = try syncedClock(readings)
        // Between the save's boot-clock read and whatever it does next, a
        // sync with a reply received a second later lands.
        let late = Mutex<TimeSample?>(nil)
        readings.afterNextBootRead {
            readings.advance(by: .seconds(1))
            let sample = readings.exchange(outbound: .milliseconds(2), inbound: .milliseconds(2))
            _ = try? clock.sync(with: sample)
            late.withLock { $0 = sample }
        }
        let saved = clock.encodedState()
        let sample = try #require(late.withLock { $0 })
        #expect(clock.samples.contains(sample))
        let restarted = TrustedClock(readings: readings)
        #expect(try restarted.restore(encoded: saved) == .restored(samples: 3))
        #expect(!restarted.samples.contains(sample))
        // The time since the last sync, read as another sync lands, is
        // never negative.
        readings.afterNextBootRead {
            readings.advance(by: .seconds(1))
            _ = try? clock.sync(with: readings.exchange(outbound: .milliseconds(2), inbound: .milliseconds(2)))
        }
        let since = try #require(clock.timeSinceSync)
        #expect(since >= .zero, "\(since)")
    }

    @Test("samples are kept in the order of their replies, whatever the order of the syncs")
    func samplesByReply() throws {
        let readings = ScriptedReadings()
        let clock = TrustedClock(configuration: .init(maximumSamples: 2), readings: readings)
        let first = readings.exchange(outbound: .milliseconds(10), inbound: .milliseconds(10))
        readings.advance(by: .seconds(5))
        let second = readings.exchange(outbound: .milliseconds(10), inbound: .milliseconds(10))
        readings.advance(by: .seconds(5))
        let third = readings.exchange(outbound: .milliseconds(10), inbound: .milliseconds(10))
        try clock.sync(with: third)
        try clock.sync(with: first)
        #expect(clock.samples == [first, third])
        try clock.sync(with: second)
        // The oldest reply leaves: the newest stays, and is the last sync.
        #expect(clock.samples == [second, third])
        #expect(clock.lastSync == third.receivedAt)
        let restarted = TrustedClock(configuration: .init(maximumSamples: 2), readings: readings)
        #expect(try restarted.restore(encoded: clock.encodedState()) == .restored(samples: 2))
        #expect(restarted.samples == clock.samples && restarted.lastSync == clock.lastSync)
        // One older than both, with no room, leaves at once.
        try clock.sync(with: first)
        #expect(clock.samples == [second, third])
    }

    @Test("the CRC-32 is the standard one")
    func crc() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
    }

    /// A clock whose restore must fail with `expected` and change nothing.
    func expectRefused(
        _ bytes: [UInt8], _ expected: TrustedTimeError, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        let path = directory.file("state")
        trustedTestWrite(bytes, to: path)
        let readings = ScriptedReadings()
        let clock = TrustedClock(readings: readings)
        let sample = readings.exchange(outbound: .milliseconds(9), inbound: .milliseconds(9))
        try clock.sync(with: sample)
        let before = (clock.samples, clock.now, clock.refreshReason)
        #expect(throws: expected, sourceLocation: sourceLocation) {
            try clock.restore(from: path)
        }
        #expect(clock.samples == before.0, sourceLocation: sourceLocation)
        #expect(clock.now.sinceEpoch == before.1.sinceEpoch, sourceLocation: sourceLocation)
        #expect(clock.refreshReason == before.2, sourceLocation: sourceLocation)
    }

    /// A valid state's bytes, from the same boot id the refused-restore clock has.
    func validBytes() throws -> [UInt8] {
        try syncedClock(ScriptedReadings()).encodedState()
    }

    /// `bytes` with the checksum made right again.
    func resealed(_ bytes: [UInt8]) -> [UInt8] {
        var copy = Array(bytes.dropLast(4))
        let crc = CRC32.checksum(copy)
        for shift in stride(from: 0, to: 32, by: 8) { copy.append(UInt8((crc >> UInt32(shift)) & 0xFF)) }
        return copy
    }

    @Test("truncated files, at every length")
    func truncated() throws {
        let bytes = try validBytes()
        for length in [4, 5, 11, 12, 13, 100, bytes.count - 49, bytes.count - 1] {
            try expectRefused(Array(bytes.prefix(length)), .stateFileTruncated)
        }
        // Shorter than the magic but a prefix of it.
        try expectRefused([], .stateFileTruncated)
        try expectRefused(Array("TK".utf8), .stateFileTruncated)
    }

    @Test("foreign files")
    func foreign() throws {
        try expectRefused(Array("{\"offset\": 3}\n".utf8), .notAStateFile)
        try expectRefused(Array("TKTX".utf8) + [UInt8](repeating: 0, count: 200), .notAStateFile)
        try expectRefused([0x7F, 0x45, 0x4C, 0x46, 2, 1, 1, 0], .notAStateFile)  // an ELF header
        try expectRefused(Array("X".utf8), .notAStateFile)
    }

    @Test("a newer format version")
    func newerVersion() throws {
        var bytes = try validBytes()
        bytes[4] = 2
        try expectRefused(resealed(bytes), .stateFileFromNewerVersion(2))
        // Even with a different layout after the header.
        var other = Array(bytes.prefix(12))
        other[4] = 0x34
        other[5] = 0x12
        try expectRefused(other + [1, 2, 3], .stateFileFromNewerVersion(0x1234))
    }

    @Test("a text file that starts with the magic is not a state file, nor from a newer version, and no save replaces it")
    func textStartingWithTheMagic() throws {
        // Its version field reads as " s" (0x7320), its reserved one as "av".
        let text = Array("TKTS saved by hand\n".utf8)
        try expectRefused(text, .notAStateFile)
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        let path = directory.file("notes")
        trustedTestWrite(text, to: path)
        #expect(throws: TrustedTimeError.notAStateFile) { try syncedClock(ScriptedReadings()).save(to: path) }
        #expect(trustedTestRead(path) == text, "a save replaced the text")
        // A newer version keeps the reserved bits 0.
        var bytes = try validBytes()
        bytes[4] = 2
        bytes[6] = 1
        try expectRefused(resealed(bytes), .notAStateFile)
    }

    @Test("corrupt files: flipped bits, trailing bytes, impossible values")
    func corrupt() throws {
        let bytes = try validBytes()
        var seed = trustedTestSeed()
        // Any single flipped bit past the magic and version is caught (by the
        // checksum, or sooner by a length or reserved-field check).
        for _ in 0..<200 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let index = 6 + Int((seed >> 33) % UInt64(bytes.count - 6))
            var flipped = bytes
            flipped[index] ^= UInt8(1 << ((seed >> 20) % 8))
            let directory = TrustedTestDirectory()
            defer { directory.remove() }
            trustedTestWrite(flipped, to: directory.file("state"))
            let clock = TrustedClock(readings: ScriptedReadings())
            do {
                try clock.restore(from: directory.file("state"))
                Issue.record("a flipped bit at \(index) went unnoticed (seed \(seed))")
            } catch {
                switch error {
                case .stateFileCorrupt, .stateFileTruncated: break
                // The header's reserved bits: set, the file is not of this kind.
                case .notAStateFile where (6..<8).contains(index): break
                default: Issue.record("flipped bit at \(index): \(error) (seed \(seed))")
                }
            }
            #expect(!clock.isSynced)
        }
        try expectRefused(bytes + [0], .stateFileCorrupt("1 bytes after the checksum"))
        var badCRC = bytes
        badCRC[badCRC.count - 1] ^= 0xFF
        try expectRefused(badCRC, .stateFileCorrupt("checksum mismatch"))
        // Version 0.
        var zero = bytes
        zero[4] = 0
        try expectRefused(resealed(zero), .stateFileCorrupt("format version 0"))
        // A sample received before it was sent (sent at := received + 1 s).
        var contents = try TrustedClockStateFile.decode(bytes)
        contents.samples[1].sentAt = contents.samples[1].receivedAt + .seconds(1)
        try expectRefused(
            TrustedClockStateFile.encode(contents), .stateFileCorrupt("a sample that cannot be used: received before it was sent"))
        // Saved "later" than this clock's boot clock reads.
        contents = try TrustedClockStateFile.decode(bytes)
        contents.savedAtBoot = contents.savedAtBoot + .seconds(86_400)
        try expectRefused(
            TrustedClockStateFile.encode(contents),
            .stateFileCorrupt("saved later than the boot clock's current reading"))
    }

    @Test("a missing file, and a directory that does not exist")
    func missing() throws {
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        let clock = TrustedClock(readings: ScriptedReadings())
        #expect(throws: TrustedTimeError.stateFileNotFound(directory.file("none"))) {
            try clock.restore(from: directory.file("none"))
        }
        // The text quotes and escapes the path: one holding a newline stays on one line.
        #expect(TrustedTimeError.stateFileNotFound("/tmp/a\nb").description == #"no saved trusted-time state at "/tmp/a\nb""#)
        #expect(throws: TrustedTimeError.system(SystemError(errno: Errno(rawValue: ENOENT), function: "open"))) {
            try clock.save(to: directory.file("no/such/dir/state"))
        }
        #expect(directory.entries().isEmpty)
    }

    @Test("a path that is not a regular file: a FIFO with no writer, a device, a directory")
    func notARegularFile() throws {
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        let fifo = directory.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let clock = TrustedClock(readings: ScriptedReadings())
        let notRegular = TrustedTimeError.system(SystemError(errno: .invalidArgument, function: "open"))
        // Opening a FIFO with no writer used to block for good.
        #expect(throws: notRegular) { try clock.restore(from: fifo) }
        #expect(throws: notRegular) { try clock.restore(from: "/dev/zero") }
        #expect(throws: notRegular) { try clock.restore(from: "/dev/null") }
        #expect(throws: TrustedTimeError.system(SystemError(errno: .isDirectory, function: "read"))) {
            try clock.restore(from: directory.file(""))
        }
        #expect(!clock.isSynced, "a refused restore changes nothing")
    }

    @Test("a new state file is 0600; one replaced keeps its group and its permission bits")
    func permissionsKept() throws {
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        let path = directory.file("state")
        let clock = try syncedClock(ScriptedReadings())
        func status() -> (mode: mode_t, group: gid_t) {
            var status = stat()
            return stat(path, &status) == 0 ? (status.st_mode & 0o7777, status.st_gid) : (0, 0)
        }
        try clock.save(to: path)
        #expect(status().mode == 0o600)
        #expect(chmod(path, 0o644) == 0)  // say, for a monitor that reads it
        try clock.save(to: path)
        #expect(status().mode == 0o644)
        // Set-id bits are not carried over; the owner can always read and write.
        #expect(chmod(path, 0o4750) == 0)
        try clock.save(to: path)
        #expect(status().mode == 0o750)
        #expect(chmod(path, 0o200) == 0)
        try clock.save(to: path)
        #expect(status().mode == 0o600)
        // A group the file was given stays its group, with its bits: any
        // group for root, else one of the process's other groups.
        var groups = [gid_t](repeating: 0, count: 64)
        let count = Int(getgroups(Int32(groups.count), &groups))
        let other =
            geteuid() == 0 ? gid_t(1) : groups.prefix(max(count, 0)).first { $0 != getegid() }
        // (A container may deny it even to root: then there is nothing to keep.)
        if let other, chown(path, uid_t.max, other) == 0 {
            #expect(chmod(path, 0o640) == 0)
            try clock.save(to: path)
            #expect(status() == (0o640, other))
        }
        #expect(directory.entries() == ["state"])
    }

    @Test("in a directory it may write in but not read, a save succeeds, as the atomic write under it does")
    func directoryWritableNotReadable() throws {
        let directory = TrustedTestDirectory()
        defer {
            _ = chmod(directory.path, 0o700)
            directory.remove()
        }
        // Nobody's, when the tests run as root; else the process's own.
        let (user, group) = geteuid() == 0 ? (uid_t(65534), gid_t(65534)) : (geteuid(), getegid())
        #expect(chown(directory.path, user, group) == 0)
        #expect(chmod(directory.path, 0o300) == 0)
        let path = directory.file("state")
        let readings = ScriptedReadings()
        let clock = try syncedClock(readings)
        try withFileSystemIDs(uid: user, gid: group) {
            // What makes the case: the directory cannot be opened to flush it.
            let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            #expect(fd < 0 && errno == EACCES)
            if fd >= 0 { close(fd) }
            try clock.save(to: path)
            try clock.sync(with: readings.exchange(outbound: .milliseconds(2), inbound: .milliseconds(2)))
            try clock.save(to: path)  // replacing the first
            try AtomicFile.write([1, 2, 3], to: directory.file("other"))
        }
        #expect(trustedTestRead(path) == clock.encodedState())
        #expect(trustedTestRead(directory.file("other")) == [1, 2, 3])
        #expect(chmod(directory.path, 0o700) == 0)
        #expect(directory.entries() == ["other", "state"])
    }

    @Test("saving replaces the old file atomically")
    func overwrite() throws {
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        let path = directory.file("state")
        let readings = ScriptedReadings()
        let clock = try syncedClock(readings)
        try clock.save(to: path)
        let first = trustedTestRead(path)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(2), inbound: .milliseconds(2)))
        try clock.save(to: path)
        let second = try #require(trustedTestRead(path))
        #expect(first != second)
        #expect(second == clock.encodedState())
        #expect(directory.entries() == ["state"])
        #expect(try TrustedClockStateFile.decode(second).samples.count == 4)
    }

    @Test("a state file whose name is as long as a name can be is saved and replaced")
    func longestName() throws {
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        let name = String(repeating: "a", count: 255)
        let path = directory.file(name)
        let readings = ScriptedReadings()
        let clock = try syncedClock(readings)
        try clock.save(to: path)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(2), inbound: .milliseconds(2)))
        try clock.save(to: path)
        #expect(trustedTestRead(path) == clock.encodedState())
        #expect(directory.entries() == [name])
    }

    @Test("saving replaces only a state file of its own kind: another file, or a newer format's, is left as it is")
    func saveKeepsOtherFiles() throws {
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        let path = directory.file("state")
        let clock = try syncedClock(ScriptedReadings())
        var newer = try validBytes()
        newer[4] = 2
        let kept: [([UInt8], TrustedTimeError)] = [
            (Array("precious notes\n".utf8), .notAStateFile),
            ([0x7F, 0x45, 0x4C, 0x46, 2, 1, 1, 0], .notAStateFile),
            (resealed(newer), .stateFileFromNewerVersion(2)),
        ]
        for (bytes, expected) in kept {
            trustedTestWrite(bytes, to: path)
            #expect(throws: expected) { try clock.save(to: path) }
            #expect(trustedTestRead(path) == bytes)
            #expect(directory.entries() == ["state"])
        }
        // Its own kind, even unreadable, is replaced: truncated, corrupt, empty.
        var corrupt = try validBytes()
        corrupt[20] ^= 1
        for bytes in [Array(try validBytes().prefix(40)), corrupt, []] {
            trustedTestWrite(bytes, to: path)
            try clock.save(to: path)
            #expect(trustedTestRead(path) == clock.encodedState())
        }
        // Not a regular file: refused before anything is written.
        let fifo = directory.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: TrustedTimeError.system(SystemError(errno: .invalidArgument, function: "open"))) {
            try clock.save(to: fifo)
        }
    }

    @Test("an empty path and one ending in a slash are refused as open refuses them, with no file made")
    func pathsNamingNoFile() throws {
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        let clock = try syncedClock(ScriptedReadings())
        // Before, a temporary file was made in the working directory, and
        // the rename failed: "rename" and ENOENT.
        #expect(throws: TrustedTimeError.system(SystemError(errno: .noSuchFileOrDirectory, function: "open"))) {
            try clock.save(to: "")
        }
        for name in ["absent/", "absent/.", "absent/.."] {
            #expect(throws: TrustedTimeError.system(SystemError(errno: .isDirectory, function: "open"))) {
                try clock.save(to: directory.file(name))
            }
        }
        // "." and ".." of a directory there is: a write (replaceStateFile's,
        // which reads nothing first) made a temporary file in it, and the
        // rename over the directory failed.
        #expect(mkdir(directory.file("empty"), 0o700) == 0)
        for name in ["empty/.", "empty/.."] {
            #expect(throws: SystemError(errno: .isDirectory, function: "open")) {
                try AtomicFile.write([1, 2, 3], to: directory.file(name))
            }
        }
        #expect(directory.entries() == ["empty"])
    }

    @Test("saving at a symbolic link replaces the link, never the file it leads to")
    func saveAtLink() throws {
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        #expect(mkdir(directory.file("kept"), 0o700) == 0)
        let target = directory.file("kept/state")
        let link = directory.file("link")
        let readings = ScriptedReadings()
        let clock = try syncedClock(readings)
        try clock.save(to: target)
        let saved = try #require(trustedTestRead(target))
        #expect(symlink("kept/state", link) == 0)
        // Restored through the link; saved there, the link becomes the file.
        #expect(try TrustedClock(readings: readings).restore(from: link) == .restored(samples: 3))
        try clock.sync(with: readings.exchange(outbound: .milliseconds(1), inbound: .milliseconds(1)))
        try clock.save(to: link)
        var status = stat()
        #expect(lstat(link, &status) == 0 && status.st_mode & S_IFMT == S_IFREG)
        #expect(trustedTestRead(link) == clock.encodedState())
        #expect(trustedTestRead(target) == saved)
        // The file that replaced the link is 0600, whatever the bits of the
        // file the link led to.
        #expect(chmod(target, 0o644) == 0)
        #expect(unlink(link) == 0 && symlink("kept/state", link) == 0)
        try clock.save(to: link)
        #expect(lstat(link, &status) == 0 && status.st_mode & S_IFMT == S_IFREG)
        #expect(status.st_mode & 0o777 == 0o600)
        // A link to another kind of file: refused, and both are left as they were.
        let notes = directory.file("notes")
        trustedTestWrite(Array("notes\n".utf8), to: notes)
        #expect(symlink("notes", directory.file("to-notes")) == 0)
        #expect(throws: TrustedTimeError.notAStateFile) { try clock.save(to: directory.file("to-notes")) }
        #expect(lstat(directory.file("to-notes"), &status) == 0 && status.st_mode & S_IFMT == S_IFLNK)
        #expect(trustedTestRead(notes) == Array("notes\n".utf8))
        // A loop of links is refused (the check's read finds ELOOP), and
        // nothing is written.
        #expect(symlink("loop-b", directory.file("loop-a")) == 0)
        #expect(symlink("loop-a", directory.file("loop-b")) == 0)
        #expect(throws: TrustedTimeError.self) { try clock.save(to: directory.file("loop-a")) }
        #expect(directory.entries() == ["kept", "link", "loop-a", "loop-b", "notes", "to-notes"])
    }

    @Test("the real machine: save, restore in a new clock, same boot id")
    func realClocks() throws {
        let directory = TrustedTestDirectory()
        defer { directory.remove() }
        let path = directory.file("state")
        let clock = TrustedClock()
        let sent = BootClock().now
        let received = BootClock().now
        try clock.sync(
            with: TimeSample(serverTime: .seconds(2_000_000_000), sentAt: sent, receivedAt: received))
        try clock.save(to: path)
        let restarted = TrustedClock()
        #expect(try restarted.restore(from: path) == .restored(samples: 1))
        let a = clock.now
        let b = restarted.now
        let c = clock.now
        #expect(a.sinceEpoch <= b.sinceEpoch && b.sinceEpoch <= c.sinceEpoch)
    }
}

/// The seed of a randomized test here: `TK_SEED` if set, else the clock.
func trustedTestSeed() -> UInt64 {
    if let text = getenv("TK_SEED"), let seed = UInt64(String(cString: text)) { return seed }
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return UInt64(time.tv_sec) &* 1_000_000_007 &+ UInt64(time.tv_nsec)
}
