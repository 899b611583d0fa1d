import Dispatch
import Glibc
import Testing
import TimerKit
import TrustedTime

@testable import Countdowns

// Cooldowns: start or find by key; leaving and coming back (a new object, a
// restart of the process in the same boot) shows the true remaining time; a
// reboot with and without a synced trusted clock; files that cannot be used.

/// A fresh path in a temporary directory of its own (removed with
/// `removeTemporaryDirectory(of:)`).
func temporaryPath(_ name: String) -> String {
    var template = Array("/tmp/timerkit-cooldowns-XXXXXX".utf8CString)
    let directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    return directory + "/" + name
}

/// Removes the directory `temporaryPath(_:)` made for `path`, with what the
/// test left in it: files, FIFOs and links (the tests make no directory
/// there).
func removeTemporaryDirectory(of path: String) {
    guard let slash = path.lastIndex(of: "/") else { return }
    let directory = String(path[..<slash])
    var names: [String] = []
    if let stream = opendir(directory) {
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(stream)
    }
    for name in names { unlink(directory + "/" + name) }
    rmdir(directory)
}

/// A "process": a manual loop at boot time `boot` of the boot `bootID`, its
/// center, and cooldowns saved at `path`.
func process(boot: Duration, bootID: String, path: String, trustedClock: TrustedClock? = nil)
    throws -> (TimerLoop, CountdownCenter, Cooldowns)
{
    let loop = try TimerLoop.manual(startingAt: boot)
    let center = try CountdownCenter(loop: loop)
    return (loop, center, Cooldowns(center: center, file: path, trustedClock: trustedClock, bootID: bootID))
}

@Suite("Cooldowns")
struct CooldownsTests {
    @Test("start or find: the second call returns the running cooldown")
    func startOrFind() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (loop, center, cooldowns) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        let first = try cooldowns.cooldown(key: "sms:1", duration: .seconds(60))
        try loop.advance(by: .seconds(25))
        let again = try cooldowns.cooldown(key: "sms:1", duration: .seconds(60))
        #expect(again == first)
        #expect(cooldowns.remaining(key: "sms:1") == .seconds(35))
        let other = try cooldowns.cooldown(key: "sms:2", duration: .seconds(10))
        #expect(other.countdown != first.countdown)
        try loop.advance(by: .seconds(35))
        #expect(cooldowns.remaining(key: "sms:1") == nil)
        #expect(cooldowns.cooldown(key: "sms:1") == nil)
        let restarted = try cooldowns.cooldown(key: "sms:1", duration: .seconds(60))
        #expect(restarted != first)
        #expect(cooldowns.remaining(key: "sms:1") == .seconds(60))
        #expect(center.count == 1)
    }

    @Test("leaving and coming back in the same boot: a new object, a new process, the true remaining time")
    func restartInTheSameBoot() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (loop, _, cooldowns) = try process(boot: .seconds(1_000), bootID: "boot-a", path: path)
        try cooldowns.cooldown(key: "code", duration: .seconds(60))
        try loop.advance(by: .seconds(20))
        // The process quits; 5 s later, in the same boot, it starts again.
        let (loop2, center2, cooldowns2) = try process(boot: .seconds(1_025), bootID: "boot-a", path: path)
        #expect(try cooldowns2.restore() == .sameBoot(restored: 1))
        #expect(cooldowns2.remaining(key: "code") == .seconds(35))
        let ended = Locked(0)
        let resend = try #require(cooldowns2.cooldown(key: "code"))
        let observation = try center2.observe(resend.countdown) { event in
            if case .ended = event { ended.withLock { $0 += 1 } }
        }
        try loop2.advance(by: .seconds(35))
        #expect(ended.value == 1)
        observation.cancel()
        // A cooldown that ended before the restart is not restored.
        let (_, _, cooldowns3) = try process(boot: .seconds(2_000), bootID: "boot-a", path: path)
        #expect(try cooldowns3.restore() == .sameBoot(restored: 0))
        #expect(cooldowns3.all.isEmpty)
    }

    /// Boot ids a state file cannot keep as they are: not ASCII, with a
    /// control character, longer than its 40-byte field, or starting with
    /// the `#` of the form it keeps them in; and ones it can.
    static let unusualBootIDs = [
        "bööt", "tab\tid", String(repeating: "x", count: 41), String(repeating: "é", count: 30),
        "#abc", "#" + String(repeating: "0", count: 32), String(repeating: "y", count: 40), "b",
        "",  // not "no id": a file saved with none is another boot's
    ]

    @Test("any string is a boot id: a restart in the same boot restores the true remaining time", arguments: unusualBootIDs)
    func unusualBootID(_ bootID: String) throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (loop, _, cooldowns) = try process(boot: .seconds(1_000), bootID: bootID, path: path)
        try cooldowns.cooldown(key: "code", duration: .seconds(60))
        try loop.advance(by: .seconds(10))
        let (_, _, cooldowns2) = try process(boot: .seconds(1_010), bootID: bootID, path: path)
        #expect(try cooldowns2.restore() == .sameBoot(restored: 1))
        #expect(cooldowns2.remaining(key: "code") == .seconds(50))
        try cooldowns2.save()
        // Another id, even one that shares the first 40 bytes: another boot.
        let other = bootID + "2"
        let (_, _, cooldowns3) = try process(boot: .seconds(1_020), bootID: other, path: path)
        #expect(try cooldowns3.restore() == .anotherBoot(fromServerTime: 0, fromTimeLeft: 1))
        #expect(cooldowns3.remaining(key: "code") == .seconds(50))
    }

    @Test("after a reboot without a synced clock: the time left when saved, never less")
    func rebootWithoutSync() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (loop, _, cooldowns) = try process(boot: .seconds(5_000), bootID: "boot-a", path: path)
        try loop.advance(by: .seconds(10))
        try cooldowns.cooldown(key: "code", duration: .seconds(300))  // saved with 300 s left
        try loop.advance(by: .seconds(100))
        // A reboot: a new boot id, the boot clock near zero again.
        let (_, _, cooldowns2) = try process(boot: .seconds(30), bootID: "boot-b", path: path)
        #expect(try cooldowns2.restore() == .anotherBoot(fromServerTime: 0, fromTimeLeft: 1))
        #expect(cooldowns2.remaining(key: "code") == .seconds(300))
        // The restore saved at once on this boot: a second restart in it, 50 s
        // later, finds the same end (250 s left), not the rule's 300 s again.
        let (_, _, cooldowns3) = try process(boot: .seconds(80), bootID: "boot-b", path: path)
        #expect(try cooldowns3.restore() == .sameBoot(restored: 1))
        #expect(cooldowns3.remaining(key: "code") == .seconds(250))
    }

    @Test("starts and cancels from several threads at once: the file holds what runs once they return")
    func concurrentSaves() throws {
        // Each start and cancel saves; a save that took the cooldowns before
        // another but wrote after it used to leave a started one out of the
        // file, or a cancelled one in it.
        for round in 0..<20 {
            let path = temporaryPath("state")
            defer { removeTemporaryDirectory(of: path) }
            let (_, _, cooldowns) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
            for index in 0..<10 { try cooldowns.cooldown(key: "old-\(index)", duration: .seconds(600)) }
            let failures = Locked<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for index in 0..<10 {
                    do {
                        if thread == 0 {
                            try cooldowns.cancel(key: "old-\(index)")
                        } else {
                            try cooldowns.cooldown(key: "new-\(thread)-\(index)", duration: .seconds(600))
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
            #expect(failures.value.isEmpty)
            let running = Set(cooldowns.all.map(\.key))
            #expect(running.count == 30)
            let (_, _, restarted) = try process(boot: .seconds(101), bootID: "boot-a", path: path)
            #expect(try restarted.restore() == .sameBoot(restored: 30))
            #expect(Set(restarted.all.map(\.key)) == running, "round \(round)")
        }
    }

    @Test("a duration with a part of a nanosecond ends at the next whole one, also after a restart")
    func partOfANanosecond() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (_, _, cooldowns) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        let cooldown = try cooldowns.cooldown(key: "code", duration: .nanoseconds(3) / 2)
        #expect(cooldown.end == BootClock.Instant(offset: .seconds(100) + .nanoseconds(2)))
        let (_, _, restarted) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        #expect(try restarted.restore() == .sameBoot(restored: 1))
        #expect(restarted.remaining(key: "code") == .nanoseconds(2))
    }

    @Test("a state file path holding a NUL is refused, and no file is written at the part before it")
    func pathWithNUL() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (_, _, cooldowns) = try process(boot: .seconds(100), bootID: "boot-a", path: path + "\0.other")
        let invalid = CountdownError.system(SystemError(errno: .invalidArgument, function: "open"))
        #expect(throws: invalid) { try cooldowns.cooldown(key: "code", duration: .seconds(60)) }
        #expect(cooldowns.remaining(key: "code") == .seconds(60), "it runs in memory all the same")
        #expect(throws: invalid) { try cooldowns.restore() }
        #expect(access(path, F_OK) != 0, "a file was written at the path cut at the NUL")
    }

    @Test("a state file path naming a FIFO with no writer gives a typed error at once, and the cooldowns run on")
    func fifoPath() throws {
        let path = temporaryPath("fifo")
        defer { removeTemporaryDirectory(of: path) }
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        let (_, _, cooldowns) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        let notRegular = CountdownError.system(SystemError(errno: .invalidArgument, function: "open"))
        // Opening it used to block for good.
        #expect(throws: notRegular) { try cooldowns.restore() }
        // A save keeps a file it cannot read, as for any unreadable one.
        #expect(throws: notRegular) { try cooldowns.cooldown(key: "code", duration: .seconds(60)) }
        #expect(cooldowns.remaining(key: "code") == .seconds(60), "it runs in memory all the same")
        // Replacing it is refused too: it is not a file to put a file in
        // the place of (as /dev/null is not).
        #expect(throws: notRegular) { try cooldowns.replaceStateFile() }
        var status = stat()
        #expect(lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO, "the FIFO was replaced")
        // Once it is removed, the way on works.
        #expect(unlink(path) == 0)
        try cooldowns.replaceStateFile()
        let (_, _, later) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        #expect(try later.restore() == .sameBoot(restored: 1))
        #expect(later.remaining(key: "code") == .seconds(50))
    }

    @Test("replaceStateFile() at a socket or a directory: a typed error, and it is left as it was")
    func replaceRefusesWhatIsNotAFile() throws {
        let directory = temporaryPath("dir")
        defer { removeTemporaryDirectory(of: directory) }
        #expect(mkdir(directory, 0o700) == 0)
        defer { rmdir(directory) }
        let socketPath = temporaryPath("socket")
        defer { removeTemporaryDirectory(of: socketPath) }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd); unlink(socketPath) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in socketPath.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        let notRegular = CountdownError.system(SystemError(errno: .invalidArgument, function: "open"))
        let isDirectory = CountdownError.system(SystemError(errno: .isDirectory, function: "open"))
        // (A device takes the socket's way: anything but a regular file, a
        // link or a directory. /dev/null is left out of a test that, against
        // code that replaced it, would replace it.)
        // (A save reads the file first: a directory is refused by its read.)
        let readDirectory = CountdownError.system(SystemError(errno: .isDirectory, function: "read"))
        for (path, expected, saving, kind) in [
            (socketPath, notRegular, notRegular, S_IFSOCK), (directory, isDirectory, readDirectory, S_IFDIR),
        ] {
            let (_, _, cooldowns) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
            #expect(throws: expected) { try cooldowns.replaceStateFile() }
            #expect(throws: saving) { try cooldowns.save() }
            var status = stat()
            #expect(lstat(path, &status) == 0 && status.st_mode & S_IFMT == kind, "\(path) was replaced")
        }
    }

    @Test("more cooldowns than the file holds: a typed error, the file as it was, every cooldown running")
    func tooMany() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        // A full file: 1,024 cooldowns saved at 100 s with 60 s to go.
        let full = CooldownStateFile.Contents(
            bootID: "boot-a", savedAt: BootClock.Instant(offset: .seconds(100)),
            entries: (0..<1_024).map { index in
                .init(key: "user-\(index)", end: BootClock.Instant(offset: .seconds(160)), duration: .seconds(60),
                      trustedEnd: nil)
            })
        try AtomicFile.write(CooldownStateFile.encode(full), to: path)
        let (_, center, cooldowns) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        #expect(try cooldowns.restore() == .sameBoot(restored: 1_024))
        let saved = try AtomicFile.read(path, limit: 1 << 20)
        #expect(throws: CountdownError.tooManyCooldowns(1_025)) {
            try cooldowns.cooldown(key: "one-more", duration: .seconds(60))
        }
        #expect(cooldowns.remaining(key: "one-more") == .seconds(60), "it runs in memory all the same")
        #expect(center.count == 1_025)
        #expect(try AtomicFile.read(path, limit: 1 << 20) == saved, "the file is left as it was")
        #expect(try cooldowns.cancel(key: "user-7"))
        let (_, _, reader) = try process(boot: .seconds(101), bootID: "boot-a", path: path)
        #expect(try reader.restore() == .sameBoot(restored: 1_024))
        #expect(reader.remaining(key: "one-more") == .seconds(59))
        #expect(reader.remaining(key: "user-7") == nil)
    }

    @Test("a cooldown too long for the clock ends at its last nanosecond, in memory as in the file, and a reboot keeps its time left")
    func endBeyondTheClock() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let last = BootClock.Instant(offset: .nanoseconds(Int64.max))
        let (_, _, cooldowns) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        let cooldown = try cooldowns.cooldown(key: "code", duration: .seconds(Int64.max))
        #expect(cooldown.end == last)
        let savedLeft = try #require(cooldowns.remaining(key: "code"))
        #expect(savedLeft == last - BootClock.Instant(offset: .seconds(100)))
        // A reboot with the boot clock at 1 s: it had that much left when saved.
        let (_, _, cooldowns2) = try process(boot: .seconds(1), bootID: "boot-b", path: path)
        #expect(try cooldowns2.restore() == .anotherBoot(fromServerTime: 0, fromTimeLeft: 1))
        let restoredLeft = try #require(cooldowns2.remaining(key: "code"))
        #expect(restoredLeft >= savedLeft, "restored \(restoredLeft), saved with \(savedLeft) left")
        #expect(cooldowns2.cooldown(key: "code")?.end == BootClock.Instant(offset: .seconds(1)) + savedLeft)
    }

    /// Cooldowns on `bootID`, its loop's boot clock at `boot`, with a
    /// trusted clock synced to `serverTime` there.
    func syncedProcess(boot: Duration, bootID: String, serverTime: Duration?, path: String) throws
        -> (TimerLoop, Cooldowns)
    {
        let loop = try TimerLoop.manual(startingAt: boot)
        let clock = TrustedClock(readings: LoopClockReadings(loop: loop, bootID: bootID))
        // No server time: a trusted clock not synced yet.
        if let serverTime {
            try clock.sync(with: TimeSample(serverTime: serverTime, sentAt: loop.now(.boot), receivedAt: loop.now(.boot)))
        }
        return (loop, Cooldowns(center: try CountdownCenter(loop: loop), file: path, trustedClock: clock))
    }

    /// The trusted clock's drift allowance (50 ppm by default) over the
    /// 300 s from a sync to the end of a 300 s cooldown started then: what
    /// the end's server time is saved with, added, so that it is the latest
    /// the end can be.
    let driftOver300Seconds = Duration.milliseconds(15)

    @Test("after a reboot with a synced trusted clock: the saved end in server time (plus its error bound)")
    func rebootWithSync() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (loop, cooldowns) = try syncedProcess(
            boot: .seconds(5_000), bootID: "boot-a", serverTime: .seconds(1_767_000_000), path: path)
        try cooldowns.cooldown(key: "code", duration: .seconds(300))
        try loop.advance(by: .seconds(100))
        try cooldowns.save()
        // The machine reboots; 50 s of server time later, the process syncs and restores.
        let (_, cooldowns2) = try syncedProcess(
            boot: .seconds(20), bootID: "boot-b", serverTime: .seconds(1_767_000_150), path: path)
        #expect(try cooldowns2.restore() == .anotherBoot(fromServerTime: 1, fromTimeLeft: 0))
        #expect(cooldowns2.remaining(key: "code") == .seconds(150) + driftOver300Seconds)
    }

    @Test("after a reboot, the error bounds of both server-time readings lengthen the cooldown, never shorten it")
    func rebootWithSyncErrorBounds() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        // Synced to within 2 s: the end, 300 s on, may be 2.015 s later
        // than read.
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let clock = TrustedClock(readings: LoopClockReadings(loop: loop, bootID: "boot-a"))
        try clock.sync(with: TimeSample(
            serverTime: .seconds(1_767_000_000), sentAt: loop.now(.boot), receivedAt: loop.now(.boot),
            serverUncertainty: .seconds(2)))
        let cooldowns = Cooldowns(center: try CountdownCenter(loop: loop), file: path, trustedClock: clock)
        try cooldowns.cooldown(key: "code", duration: .seconds(300))
        // After a reboot, synced to within 3 s at 150 s of server time
        // later: it may be as early as 147 s later. So up to 155.015 s may
        // be left; the readings alone say 150.
        let loop2 = try TimerLoop.manual(startingAt: .seconds(20))
        let clock2 = TrustedClock(readings: LoopClockReadings(loop: loop2, bootID: "boot-b"))
        try clock2.sync(with: TimeSample(
            serverTime: .seconds(1_767_000_150), sentAt: loop2.now(.boot), receivedAt: loop2.now(.boot),
            serverUncertainty: .seconds(3)))
        let cooldowns2 = Cooldowns(center: try CountdownCenter(loop: loop2), file: path, trustedClock: clock2)
        #expect(try cooldowns2.restore() == .anotherBoot(fromServerTime: 1, fromTimeLeft: 0))
        #expect(cooldowns2.remaining(key: "code") == .seconds(155) + driftOver300Seconds)
    }

    @Test("after a reboot with a synced trusted clock that reads far earlier than the saved end: never more than the duration left")
    func rebootWithEarlierServerTime() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (_, cooldowns) = try syncedProcess(
            boot: .seconds(5_000), bootID: "boot-a", serverTime: .seconds(1_767_000_000), path: path)
        try cooldowns.cooldown(key: "code", duration: .seconds(60))
        try cooldowns.save()
        // After the reboot the clock syncs to a server time a year earlier
        // (a server that was wrong before, or is now): the saved end is a
        // year and 60 s ahead, but a cooldown of 60 s has at most 60 s left.
        let (_, cooldowns2) = try syncedProcess(
            boot: .seconds(20), bootID: "boot-b", serverTime: .seconds(1_767_000_000 - 31_536_000), path: path)
        #expect(try cooldowns2.restore() == .anotherBoot(fromServerTime: 1, fromTimeLeft: 0))
        #expect(cooldowns2.remaining(key: "code") == .seconds(60))
    }

    @Test("after a reboot with a synced trusted clock that reads earlier than at the save: never more than the time left when saved")
    func rebootWithEarlierServerTimeAfterPartOfTheCooldown() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (loop, cooldowns) = try syncedProcess(
            boot: .seconds(5_000), bootID: "boot-a", serverTime: .seconds(1_767_000_000), path: path)
        try cooldowns.cooldown(key: "code", duration: .seconds(60))
        try loop.advance(by: .seconds(50))
        try cooldowns.save()  // 10 s left
        // After the reboot the clock syncs to a server time an hour earlier:
        // the saved end is an hour and 10 s ahead, and the duration 60 s,
        // but the cooldown had 10 s left.
        let (_, cooldowns2) = try syncedProcess(
            boot: .seconds(20), bootID: "boot-b", serverTime: .seconds(1_767_000_000 - 3_600), path: path)
        #expect(try cooldowns2.restore() == .anotherBoot(fromServerTime: 1, fromTimeLeft: 0))
        #expect(cooldowns2.remaining(key: "code") == .seconds(10))
    }

    @Test("in the same boot, a file whose end lies more than its duration after the save: at most the duration (and 1 ns) from the save")
    func sameBootEndPastDuration() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        // No save writes such a file (a cooldown starts before the save
        // that holds it): saved at 5,000 s, "k" 10 s long but ending at
        // 9,000 s; "ok" as a save writes it.
        func entry(_ key: String, end: Int64, duration: Int64) -> CooldownStateFile.Entry {
            .init(key: key, end: BootClock.Instant(offset: .seconds(end)), duration: .seconds(duration), trustedEnd: nil)
        }
        try AtomicFile.write(
            CooldownStateFile.encode(CooldownStateFile.Contents(
                bootID: "boot-a", savedAt: BootClock.Instant(offset: .seconds(5_000)),
                entries: [entry("k", end: 9_000, duration: 10), entry("ok", end: 5_020, duration: 30)])),
            to: path)
        let (_, _, cooldowns) = try process(boot: .seconds(5_004), bootID: "boot-a", path: path)
        #expect(try cooldowns.restore() == .sameBoot(restored: 2))
        #expect(cooldowns.remaining(key: "k") == .seconds(6) + .nanoseconds(1))
        #expect(cooldowns.remaining(key: "ok") == .seconds(16))
        // Past the capped end: "k" is not restored at all.
        let (_, _, later) = try process(boot: .seconds(5_011), bootID: "boot-a", path: path)
        #expect(try later.restore() == .sameBoot(restored: 1))
        #expect(later.remaining(key: "k") == nil)
    }

    @Test("a file that cannot be used gives a typed error and changes nothing")
    func unusableFiles() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (loop, _, cooldowns) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        try cooldowns.cooldown(key: "kept", duration: .seconds(60))
        let good = try #require(readAll(path))

        func expectRefused(_ bytes: [UInt8], _ expected: CountdownError) throws {
            try write(bytes, to: path)
            // A lookup reads the file first: it finds nothing, and changes nothing.
            let (_, _, looker) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
            #expect(looker.cooldown(key: "kept") == nil)
            #expect(looker.remaining(key: "kept") == nil)
            #expect(looker.all.isEmpty)
            #expect(readAll(path) == bytes, "a lookup changed the file")
            let (_, _, other) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
            // Starting a cooldown saves, which reads the file first: refused,
            // the file is kept, and the cooldown runs in memory.
            #expect(throws: expected) { try other.cooldown(key: "mine", duration: .seconds(5)) }
            #expect(throws: expected) { try other.restore() }
            #expect(other.all.map(\.key) == ["mine"], "a refused restore changed the cooldowns")
            #expect(readAll(path) == bytes, "a refused restore changed the file")
        }
        try expectRefused(Array(good.prefix(20)), .stateFileTruncated)
        try expectRefused(Array(good.prefix(5)), .stateFileTruncated)
        try expectRefused(Array("{\"code\": 60}".utf8), .notAStateFile)
        try expectRefused(Array("TKTS".utf8) + good.dropFirst(4), .notAStateFile)  // a trusted-time state
        var flipped = good
        flipped[60] ^= 0x40
        try expectRefused(flipped, .stateFileCorrupt("checksum mismatch"))
        var newer = good
        newer[4] = 9
        try expectRefused(newer, .stateFileFromNewerVersion(9))
        // A text file that starts with the magic: its version field reads
        // as " n" (0x6E20), but the header's reserved bits are set.
        try expectRefused(Array("TKCD notes on the codes\n".utf8), .notAStateFile)
        try expectRefused([], .stateFileTruncated)
        // A save writes each key once: a file that repeats one (byte for
        // byte: "é" as U+00E9 and as "e" + U+0301 are two keys) is not one
        // a save wrote.
        func file(_ keys: [String]) -> [UInt8] {
            CooldownStateFile.encode(CooldownStateFile.Contents(
                bootID: "boot-a", savedAt: BootClock.Instant(offset: .seconds(100)),
                entries: keys.map {
                    .init(key: $0, end: BootClock.Instant(offset: .seconds(150)), duration: .seconds(60),
                          trustedEnd: nil)
                }))
        }
        #expect(try CooldownStateFile.decode(file(["b", "a", "\u{e9}", "e\u{301}"])).entries.count == 4)
        try expectRefused(file(["kept", "kept"]), .stateFileCorrupt("entry 1: a key that an earlier entry has"))
        try expectRefused(
            file(["a", "\u{e9}", "b", "\u{e9}"]), .stateFileCorrupt("entry 3: a key that an earlier entry has"))
        // The way on: replace the file with what runs now.
        let (_, _, fresh) = try process(boot: .seconds(120), bootID: "boot-a", path: path)
        _ = try? fresh.cooldown(key: "new", duration: .seconds(30))
        try fresh.replaceStateFile()
        let (_, _, reader) = try process(boot: .seconds(121), bootID: "boot-a", path: path)
        #expect(try reader.restore() == .sameBoot(restored: 1))
        #expect(reader.remaining(key: "new") == .seconds(29))
        // Missing: its own error.
        let missing = Cooldowns(center: try CountdownCenter(loop: loop), file: path + ".none", bootID: "boot-a")
        #expect(throws: CountdownError.stateFileNotFound(path + ".none")) { try missing.restore() }
        #expect(throws: CountdownError.noStateFile) {
            try Cooldowns(center: try CountdownCenter(loop: loop)).restore()
        }
    }

    @Test("a new object that saves before it restores keeps what the file held")
    func saveKeepsTheFile() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (_, _, first) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        try first.cooldown(key: "a", duration: .seconds(60))
        let (_, _, second) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        try second.cooldown(key: "b", duration: .seconds(60))  // saves: "a" must stay
        let (_, _, third) = try process(boot: .seconds(120), bootID: "boot-a", path: path)
        #expect(try third.restore() == .sameBoot(restored: 2))
        #expect(third.remaining(key: "a") == .seconds(40))
        #expect(third.remaining(key: "b") == .seconds(50))
    }

    @Test("a start before restore() reads the file first: the cooldown returned is the file's, and it runs to the file's end")
    func startBeforeRestoreFindsTheSavedCooldown() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        // An earlier process saved a 60 s cooldown.
        try Cooldowns(center: try CountdownCenter(loop: loop), file: path, bootID: "b")
            .cooldown(key: "k", duration: .seconds(60))
        // The restart, in the same boot; restore() is not called.
        let center = try CountdownCenter(loop: loop)
        let cooldowns = Cooldowns(center: center, file: path, bootID: "b")
        let found = try cooldowns.cooldown(key: "k", duration: .seconds(30))
        #expect(center.contains(found.countdown))
        #expect(cooldowns.cooldown(key: "k") == found)
        #expect(found.end == BootClock.Instant(offset: .seconds(5_060)))
        #expect(cooldowns.remaining(key: "k") == .seconds(60))
        let ended = Locked(0)
        let observation = try center.observe(found.countdown) { event in
            if case .ended = event { ended.withLock { $0 += 1 } }
        }
        try loop.advance(by: .seconds(60) - .nanoseconds(1))
        #expect(ended.value == 0, "ended before the file's end")
        try loop.advance(by: .nanoseconds(1))
        #expect(ended.value == 1)
        observation.cancel()
        #expect(center.count == 0)
    }

    @Test("a lookup before restore() reads the file first: cooldown(key:), remaining(key:) and all find what it holds")
    func lookupsBeforeRestoreReadTheFile() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (_, _, first) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        try first.cooldown(key: "k", duration: .seconds(60))
        // Restarts in the same boot, each making one lookup first.
        let (_, byKey, cooldowns) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        let found = try #require(cooldowns.cooldown(key: "k"))
        #expect(found.end == BootClock.Instant(offset: .seconds(160)))
        #expect(byKey.contains(found.countdown))
        let (_, _, byRemaining) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        #expect(byRemaining.remaining(key: "k") == .seconds(50))
        let (loop, byAll, all) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        #expect(all.all.map(\.key) == ["k"])
        #expect(byAll.count == 1)
        // The cooldown found is the one that runs: it ends at the file's end.
        try loop.advance(by: .seconds(50) - .nanoseconds(1))
        #expect(all.remaining(key: "k") == .nanoseconds(1))
        try loop.advance(by: .nanoseconds(1))
        #expect(all.cooldown(key: "k") == nil)
        #expect(byAll.count == 0)
    }

    @Test("keys are told apart by their bytes: canonically equal strings are two cooldowns, each saved and found with its own bytes")
    func keysByBytes() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (_, center, cooldowns) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed, "one String to Swift")
        let a = try cooldowns.cooldown(key: composed, duration: .seconds(60))
        let b = try cooldowns.cooldown(key: decomposed, duration: .seconds(30))
        #expect(a.countdown != b.countdown)
        #expect(a != b)
        #expect(center.count == 2)
        #expect(cooldowns.cooldown(key: decomposed).map { Array($0.key.utf8) } == Array(decomposed.utf8))
        #expect(cooldowns.remaining(key: composed) == .seconds(60))
        #expect(cooldowns.remaining(key: decomposed) == .seconds(30))
        // A restart finds each with its own bytes and its own end.
        let (_, _, restarted) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        #expect(try restarted.restore() == .sameBoot(restored: 2))
        #expect(restarted.remaining(key: composed) == .seconds(50))
        #expect(restarted.remaining(key: decomposed) == .seconds(20))
        #expect(Set(restarted.all.map { Array($0.key.utf8) }) == [Array(composed.utf8), Array(decomposed.utf8)])
        // Cancelling one leaves the other.
        #expect(try restarted.cancel(key: decomposed))
        #expect(restarted.remaining(key: composed) == .seconds(50))
        #expect(restarted.remaining(key: decomposed) == nil)
        let (_, _, again) = try process(boot: .seconds(111), bootID: "boot-a", path: path)
        #expect(again.all.map { Array($0.key.utf8) } == [Array(composed.utf8)])
    }

    @Test("a cancel before restore() reads the file first: the file's cooldown ends and does not come back")
    func cancelBeforeRestoreEndsTheSavedCooldown() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (_, _, first) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        try first.cooldown(key: "k", duration: .seconds(60))
        let (_, _, second) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        #expect(try second.cancel(key: "k"))
        #expect(second.all.isEmpty)
        let (_, _, third) = try process(boot: .seconds(120), bootID: "boot-a", path: path)
        #expect(try third.restore() == .sameBoot(restored: 0))
        #expect(third.all.isEmpty)
    }

    @Test("two writers of one file at once (two processes): each save reads what the other saved since, and keeps it")
    func twoWritersKeepEachOthersCooldowns() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        // Two processes of one boot: their boot clocks read alike.
        let (firstLoop, _, first) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        let (secondLoop, _, second) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        try first.cooldown(key: "sms", duration: .seconds(60))
        // The second reads the file at its first call, and saves both.
        try second.cooldown(key: "mail", duration: .seconds(120))
        // The file is the second's now: the first reads it before it saves,
        // rather than writing its own two over the second's one.
        try first.cooldown(key: "push", duration: .seconds(90))
        #expect(first.all.map(\.key).sorted() == ["mail", "push", "sms"])
        try firstLoop.advance(by: .seconds(10))
        try secondLoop.advance(by: .seconds(10))
        // And back: the second's next save keeps the first's "push".
        #expect(try second.cancel(key: "sms"))
        #expect(second.all.map(\.key).sorted() == ["mail", "push"])
        let (_, _, third) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        #expect(try third.restore() == .sameBoot(restored: 2))
        #expect(third.remaining(key: "mail") == .seconds(110))
        #expect(third.remaining(key: "push") == .seconds(80))
        #expect(third.remaining(key: "sms") == nil)
        // A cancel is its own Cooldowns': the first still runs "sms", and
        // its next save writes it back (late, never early).
        try first.cooldown(key: "code", duration: .seconds(30))
        #expect(first.remaining(key: "sms") == .seconds(50))
        let (_, _, fourth) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        #expect(try fourth.restore() == .sameBoot(restored: 4))
    }

    @Test("a cancel not saved yet holds against the cooldown it ended, not against one another writer starts for the key after it")
    func unsavedCancelSparesAnotherWritersNewCooldown() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (firstLoop, _, first) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        let (secondLoop, _, second) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        try first.cooldown(key: "sms", duration: .seconds(60))
        try second.cooldown(key: "mail", duration: .seconds(60))
        // The first's cancel cannot be saved: the file is unreadable.
        try write(Array("not a state file".utf8), to: path)
        #expect(throws: CountdownError.notAStateFile) { try first.cancel(key: "sms") }
        try firstLoop.advance(by: .seconds(10))
        try secondLoop.advance(by: .seconds(10))
        // The second, which still runs the cancelled one, writes it over
        // the unreadable file, then cancels it and starts a new one, 10 s
        // after the first's cancel.
        try second.replaceStateFile()
        #expect(try second.cancel(key: "sms"))
        try second.cooldown(key: "sms", duration: .seconds(60))
        // The first's save reads the second's file: the cancel skips
        // nothing there (the second's "sms" is new), and keeps it.
        try first.cooldown(key: "push", duration: .seconds(60))
        #expect(first.remaining(key: "sms") == .seconds(60))
        let (_, _, restarted) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        #expect(try restarted.restore() == .sameBoot(restored: 3))
        #expect(restarted.remaining(key: "sms") == .seconds(60))
    }

    @Test("an unsaved cancel made as its cooldown started holds against it, though the file rounds its end up and its duration down")
    func unsavedCancelAtTheStartHolds() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (_, _, cooldowns) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        // 60 s and half a nanosecond: the end is rounded up, the file's
        // duration down.
        try cooldowns.cooldown(key: "sms", duration: Duration(secondsComponent: 60, attosecondsComponent: 500_000_000))
        let saved = try AtomicFile.read(path, limit: 1 << 20)
        try write(Array("not a state file".utf8), to: path)
        #expect(throws: CountdownError.notAStateFile) { try cooldowns.cancel(key: "sms") }
        // The file is back as it was, and another writer adds to it: the
        // save reads it, and the cancel skips its "sms".
        try write(saved, to: path)
        let (_, _, other) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        try other.cooldown(key: "mail", duration: .seconds(30))
        try cooldowns.save()
        #expect(cooldowns.remaining(key: "sms") == nil)
        #expect(cooldowns.remaining(key: "mail") == .seconds(30))
        let (_, _, restarted) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        #expect(try restarted.restore() == .sameBoot(restored: 1))
        #expect(restarted.remaining(key: "sms") == nil)
    }

    @Test("with no boot id to compare, a file another writer saved meanwhile is read as this boot's: its cooldowns keep their ends")
    func noBootIDReadsAnotherWritersFileAsThisBoots() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        func process(_ boot: Duration) throws -> (TimerLoop, Cooldowns) {
            let loop = try TimerLoop.manual(startingAt: boot)
            let center = try CountdownCenter(loop: loop)
            return (loop, Cooldowns(center: center, file: path, trustedClock: nil, knownBootID: nil))
        }
        let (firstLoop, first) = try process(.seconds(100))
        let (secondLoop, second) = try process(.seconds(100))
        try first.cooldown(key: "sms", duration: .seconds(60))
        try second.cooldown(key: "mail", duration: .seconds(60))
        for _ in 0..<3 {
            try firstLoop.advance(by: .seconds(10))
            try secondLoop.advance(by: .seconds(10))
            // Each save reads the other's file: "sms" keeps its end, 160 s,
            // rather than getting its time left at the other's save again.
            try first.save()
            try second.save()
        }
        #expect(first.remaining(key: "sms") == .seconds(30))
        #expect(second.remaining(key: "sms") == .seconds(30))
        #expect(second.remaining(key: "mail") == .seconds(30))
    }

    @Test("a file removed, written by another writer, or left unreadable since this one's last save: nothing running is lost, nothing unreadable written over")
    func fileChangedElsewhereSinceTheLastSave() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (firstLoop, _, first) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        try first.cooldown(key: "sms", duration: .seconds(60))
        // Removed, then written by another writer that never saw "sms": the
        // first's next save keeps both.
        unlink(path)
        let (secondLoop, _, second) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        try second.cooldown(key: "mail", duration: .seconds(60))
        try first.cooldown(key: "push", duration: .seconds(60))
        #expect(first.all.map(\.key).sorted() == ["mail", "push", "sms"])
        // Unreadable: the next save reads it, reports why, and leaves it as
        // it is; the cooldown runs in memory.
        let garbage = Array("not a state file".utf8)
        try write(garbage, to: path)
        #expect(throws: CountdownError.notAStateFile) { try first.cooldown(key: "code", duration: .seconds(60)) }
        #expect(try AtomicFile.read(path, limit: 1 << 20) == garbage)
        #expect(first.remaining(key: "code") == .seconds(60))
        #expect(throws: CountdownError.notAStateFile) { try first.save() }
        // Removed: the next save writes what runs.
        unlink(path)
        try first.save()
        try firstLoop.advance(by: .seconds(10))
        try secondLoop.advance(by: .seconds(10))
        let (_, _, restarted) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        #expect(try restarted.restore() == .sameBoot(restored: 4))
        #expect(restarted.remaining(key: "sms") == .seconds(50))
    }

    @Test("a cancel while the file cannot be read: the file's cooldown stays cancelled once it can, and is not saved again")
    func cancelWhileTheFileCannotBeRead() throws {
        let (path, saved) = try fileMadeUnreadable(holding: ["sms", "mail"])
        defer { removeTemporaryDirectory(of: path) }
        let (_, _, second) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        #expect(throws: CountdownError.notAStateFile) { try second.cooldown(key: "sms", duration: .seconds(60)) }
        // One running in memory, and one only in the file: both cancelled,
        // and the file's error told.
        #expect(throws: CountdownError.notAStateFile) { try second.cancel(key: "sms") }
        #expect(throws: CountdownError.notAStateFile) { try second.cancel(key: "mail") }
        #expect(second.remaining(key: "sms") == nil)
        // The file can be read again: the next start reads it, and brings
        // back neither.
        try write(saved, to: path)
        try second.cooldown(key: "email", duration: .seconds(30))
        #expect(second.remaining(key: "sms") == nil)
        #expect(second.remaining(key: "mail") == nil)
        #expect(second.all.map(\.key) == ["email"])
        // Its save wrote neither: a restart finds only the new one.
        let (_, _, third) = try process(boot: .seconds(120), bootID: "boot-a", path: path)
        #expect(try third.restore() == .sameBoot(restored: 1))
        #expect(third.all.map(\.key) == ["email"])
    }

    @Test("a cancel since the last save: an explicit restore() does not bring it back, and a new start for the key runs to its own end")
    func restoreAfterAnUnsavedCancel() throws {
        let (path, saved) = try fileMadeUnreadable(holding: ["sms"])
        defer { removeTemporaryDirectory(of: path) }
        let (_, _, second) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        #expect(throws: CountdownError.notAStateFile) { try second.cancel(key: "sms") }
        // A new one for the key, shorter than the saved one: in memory only.
        #expect(throws: CountdownError.notAStateFile) { try second.cooldown(key: "sms", duration: .seconds(5)) }
        try write(saved, to: path)
        // The saved one (ending at 160) was cancelled: the new one keeps its
        // end (115) rather than move to the later one.
        #expect(try second.restore() == .sameBoot(restored: 0))
        #expect(second.remaining(key: "sms") == .seconds(5))
        try second.save()
        let (_, _, third) = try process(boot: .seconds(112), bootID: "boot-a", path: path)
        #expect(third.remaining(key: "sms") == .seconds(3))
    }

    @Test("a cancel while the file cannot be read, then a retry or a restore once it can: the file is saved without the cooldown, and a restart does not bring it back", arguments: ["cancel", "restore"])
    func cancelWhileTheFileCannotBeReadThenRestart(_ then: String) throws {
        let (path, saved) = try fileMadeUnreadable(holding: ["sms"])
        defer { removeTemporaryDirectory(of: path) }
        let (_, _, second) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        #expect(throws: CountdownError.notAStateFile) { try second.cancel(key: "sms") }
        try write(saved, to: path)
        if then == "cancel" {
            // Nothing runs for it in memory, but the file holds it.
            #expect(try second.cancel(key: "sms") == false)
        } else {
            #expect(try second.restore() == .sameBoot(restored: 0))
        }
        let (_, _, third) = try process(boot: .seconds(120), bootID: "boot-a", path: path)
        #expect(try third.restore() == .sameBoot(restored: 0))
        #expect(third.remaining(key: "sms") == nil)
    }

    @Test("a restore in the same boot saves the file without cooldowns cancelled since its last save, ended ones too, so that a reboot does not bring them back")
    func sameBootRestoreDropsStaleCooldowns() throws {
        // Cancelled while the file could not be read, and over by the time
        // it can be.
        let (path, saved) = try fileMadeUnreadable(holding: ["sms"])  // ends at 160
        defer { removeTemporaryDirectory(of: path) }
        let (loop, _, second) = try process(boot: .seconds(110), bootID: "boot-a", path: path)
        #expect(throws: CountdownError.notAStateFile) { try second.cancel(key: "sms") }
        try write(saved, to: path)
        try loop.advance(by: .seconds(60))
        #expect(try second.restore() == .sameBoot(restored: 0))
        let (_, _, afterReboot) = try process(boot: .seconds(20), bootID: "boot-b", path: path)
        #expect(try afterReboot.restore() == .anotherBoot(fromServerTime: 0, fromTimeLeft: 0))
        #expect(afterReboot.remaining(key: "sms") == nil)
    }

    @Test("a same-boot restore with nothing cancelled writes nothing: the server-time ends of a save made while synced survive a restart before the next sync")
    func sameBootRestoreKeepsServerTimeEnds() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (_, first) = try syncedProcess(
            boot: .seconds(5_000), bootID: "boot-a", serverTime: .seconds(1_767_000_000), path: path)
        try first.cooldown(key: "code", duration: .seconds(300))
        try first.cooldown(key: "short", duration: .seconds(10))
        // The same boot, 20 s later ("short" has ended), the clock not synced yet.
        let (_, second) = try syncedProcess(boot: .seconds(5_020), bootID: "boot-a", serverTime: nil, path: path)
        #expect(second.remaining(key: "code") == .seconds(280))
        #expect(try second.restore() == .sameBoot(restored: 0))
        // A reboot, 290 s of server time after the start: 10 s left.
        let (_, third) = try syncedProcess(
            boot: .seconds(20), bootID: "boot-b", serverTime: .seconds(1_767_000_290), path: path)
        #expect(try third.restore() == .anotherBoot(fromServerTime: 1, fromTimeLeft: 0))
        #expect(third.remaining(key: "code") == .seconds(10) + driftOver300Seconds)
    }

    /// A synced process starts a 300 s cooldown, "code" (it ends at server
    /// time 1_767_000_300), and saves it 100 s in; after a reboot (at 50 s
    /// of server time later), a process whose clock is not synced yet
    /// restores it from the 200 s it had left when saved. Returns that
    /// process.
    func savedThenRestoredAfterARebootUnsynced(path: String) throws -> (TimerLoop, Cooldowns) {
        let (loop, first) = try syncedProcess(
            boot: .seconds(5_000), bootID: "boot-a", serverTime: .seconds(1_767_000_000), path: path)
        try first.cooldown(key: "code", duration: .seconds(300))
        try loop.advance(by: .seconds(100))
        try first.save()
        let (rebooted, second) = try syncedProcess(boot: .seconds(20), bootID: "boot-b", serverTime: nil, path: path)
        #expect(try second.restore() == .anotherBoot(fromServerTime: 0, fromTimeLeft: 1))
        #expect(second.remaining(key: "code") == .seconds(200))
        return (rebooted, second)
    }

    @Test("a save made while the trusted clock is not synced keeps the server-time ends the file gave: a second reboot still counts from server time")
    func unsyncedSavesKeepServerTimeEnds() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        // The restore saves at once on this boot; a new cooldown and a
        // cancel save the file twice more.
        let (_, second) = try savedThenRestoredAfterARebootUnsynced(path: path)
        try second.cooldown(key: "other", duration: .seconds(30))
        #expect(try second.cancel(key: "other"))
        // Another reboot, 250 s of server time after the start: the file
        // still holds the server-time end, so "code" has 50 s left, not the
        // 200 s the unsynced saves could count.
        let (_, third) = try syncedProcess(
            boot: .seconds(20), bootID: "boot-c", serverTime: .seconds(1_767_000_250), path: path)
        #expect(try third.restore() == .anotherBoot(fromServerTime: 1, fromTimeLeft: 0))
        #expect(third.remaining(key: "code") == .seconds(50) + driftOver300Seconds)
        #expect(third.remaining(key: "other") == nil)
    }

    @Test("a file of format version 1, whose server-time ends lack their error bounds: after a reboot, its cooldowns count from the time left")
    func versionOneServerTimeEndsAreNotRead() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (loop, first) = try syncedProcess(
            boot: .seconds(5_000), bootID: "boot-a", serverTime: .seconds(1_767_000_000), path: path)
        try first.cooldown(key: "code", duration: .seconds(300))
        try loop.advance(by: .seconds(100))
        try first.save()
        // The same file as version 1 wrote it (the same layout), its checksum made right.
        var bytes = try #require(readAll(path))
        #expect(bytes[4] == 2)
        bytes[4] = 1
        bytes.removeLast(4)
        let crc = CRC32.checksum(bytes)
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8((crc >> UInt32(shift)) & 0xFF)) }
        try write(bytes, to: path)
        // A reboot, 250 s of server time after the start: version 2 would end
        // it in 50 s; version 1's end, a reading alone, is not relied on.
        let (_, second) = try syncedProcess(
            boot: .seconds(20), bootID: "boot-b", serverTime: .seconds(1_767_000_250), path: path)
        #expect(try second.restore() == .anotherBoot(fromServerTime: 0, fromTimeLeft: 1))
        #expect(second.remaining(key: "code") == .seconds(200))
    }

    @Test("a cooldown that a restore moves to the file's later end takes no server-time end from the file, which bounds the file's cooldown, not this one")
    func movedCooldownTakesNoServerTimeEndFromTheFile() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (_, first) = try syncedProcess(
            boot: .seconds(5_000), bootID: "boot-a", serverTime: .seconds(1_767_000_000), path: path)
        try first.cooldown(key: "code", duration: .seconds(300))  // to boot 5_300, saved
        // Another Cooldowns on the file saved a later end for the key on the
        // boot clock, with a server-time end that has passed (as one
        // restored from its time left after a reboot has).
        let later = CooldownStateFile.Entry(
            key: "code", end: BootClock.Instant(offset: .seconds(5_350)), duration: .seconds(400),
            trustedEnd: .seconds(1_767_000_000 - 10))
        try write(
            CooldownStateFile.encode(CooldownStateFile.Contents(
                bootID: "boot-a", savedAt: BootClock.Instant(offset: .seconds(5_000)), entries: [later])),
            to: path)
        #expect(try first.restore() == .sameBoot(restored: 1))
        #expect(first.remaining(key: "code") == .seconds(350))
        try first.save()
        // A reboot, 100 s of server time later: the 250 s left of its
        // boot-clock end (read in server time when saved, with the 17.5 ms
        // the 350 s since the sync allow), not the passed end of the file.
        let (_, second) = try syncedProcess(
            boot: .seconds(20), bootID: "boot-b", serverTime: .seconds(1_767_000_100), path: path)
        #expect(try second.restore() == .anotherBoot(fromServerTime: 1, fromTimeLeft: 0))
        #expect(second.remaining(key: "code") == .seconds(250) + .microseconds(17_500))
    }

    @Test("a save after a reset of the trusted clock keeps the server-time ends of saves made before it")
    func saveAfterResetKeepsServerTimeEnds() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (loop, first) = try syncedProcess(
            boot: .seconds(5_000), bootID: "boot-a", serverTime: .seconds(1_767_000_000), path: path)
        try first.cooldown(key: "code", duration: .seconds(300))  // saved while synced
        // The app drops the clock's samples to sync again; a new cooldown
        // saves the file before it has.
        first.trustedClock!.reset()
        try loop.advance(by: .seconds(100))
        try first.cooldown(key: "other", duration: .seconds(300))
        // A reboot, 250 s of server time after the start: "code" still
        // ends in server time, "other", never placed there, from its time left.
        let (_, second) = try syncedProcess(
            boot: .seconds(20), bootID: "boot-b", serverTime: .seconds(1_767_000_250), path: path)
        #expect(try second.restore() == .anotherBoot(fromServerTime: 1, fromTimeLeft: 1))
        #expect(second.remaining(key: "code") == .seconds(50) + driftOver300Seconds)
        #expect(second.remaining(key: "other") == .seconds(300))
    }

    @Test("a save once the clock syncs keeps the file's server-time end when its own reading ends later")
    func syncAfterRestoreKeepsTheEarlierServerTimeEnd() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        // Restored to boot 220, 50 s later in server time than its end.
        let (loop2, second) = try savedThenRestoredAfterARebootUnsynced(path: path)
        // 10 s later the clock syncs (server time 1_767_000_160), and a save
        // follows: its reading of the end is 1_767_000_350, the file's 300.
        try loop2.advance(by: .seconds(10))
        let boot = loop2.now(.boot)
        try second.trustedClock!.sync(with: TimeSample(
            serverTime: .seconds(1_767_000_160), sentAt: boot, receivedAt: boot))
        try second.save()
        // Another reboot at server time 1_767_000_250: 50 s left, not 100.
        let (_, third) = try syncedProcess(
            boot: .seconds(20), bootID: "boot-c", serverTime: .seconds(1_767_000_250), path: path)
        #expect(try third.restore() == .anotherBoot(fromServerTime: 1, fromTimeLeft: 0))
        #expect(third.remaining(key: "code") == .seconds(50) + driftOver300Seconds)
    }

    @Test("a server-time end the file gave stays with its cooldown only: a new cooldown for the key after it ended, saved unsynced, has none")
    func serverTimeEndDoesNotPassToANewCooldown() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (_, first) = try syncedProcess(
            boot: .seconds(5_000), bootID: "boot-a", serverTime: .seconds(1_767_000_000), path: path)
        try first.cooldown(key: "code", duration: .seconds(60))  // ends at server time 1_767_000_060
        // A reboot, unsynced: restored with 60 s left. It ends; a new
        // cooldown for the key starts (and is saved) 61 s later.
        let (loop, second) = try syncedProcess(boot: .seconds(20), bootID: "boot-b", serverTime: nil, path: path)
        #expect(try second.restore() == .anotherBoot(fromServerTime: 0, fromTimeLeft: 1))
        try loop.advance(by: .seconds(61))
        try second.cooldown(key: "code", duration: .seconds(300))
        try loop.advance(by: .seconds(10))
        try second.save()
        // Another reboot, at server time 1_767_000_100: the old end has
        // passed, but the new cooldown had 290 s left when saved.
        let (_, third) = try syncedProcess(
            boot: .seconds(20), bootID: "boot-c", serverTime: .seconds(1_767_000_100), path: path)
        #expect(try third.restore() == .anotherBoot(fromServerTime: 0, fromTimeLeft: 1))
        #expect(third.remaining(key: "code") == .seconds(290))
    }

    @Test("a cancel of a key that runs nowhere, once the file is read, saves nothing")
    func cancelOfAnUnknownKeySavesNothing() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        let (_, _, cooldowns) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        try cooldowns.cooldown(key: "sms", duration: .seconds(60))
        func inode() -> UInt64 {
            var info = stat()
            return stat(path, &info) == 0 ? UInt64(info.st_ino) : 0
        }
        let before = inode()
        for i in 0..<100 { #expect(try cooldowns.cancel(key: "never-\(i)") == false) }
        #expect(inode() == before)  // a save renames a new file over it
        #expect(try cooldowns.cancel(key: "sms"))
        #expect(inode() != before)
    }

    @Test("a save forgets the cancels it wrote, not one made again while it wrote")
    func saveForgetsOnlyTheCancelsItWrote() {
        var running = RunningCooldowns()
        let (k, other) = (CooldownKey("k"), CooldownKey("other"))
        let time = BootClock.Instant(offset: .seconds(100))
        running.noteCancel(of: k, at: time)
        running.noteCancel(of: other, at: time)
        let taken = running.unsavedCancels  // what a save takes with the cooldowns it writes
        running.noteCancel(of: k, at: time + .seconds(1))  // cancelled again (after a start) while the save writes
        running.forgetCancels(taken)
        #expect(running.isCancelUnsaved(k))
        #expect(!running.isCancelUnsaved(other))
        #expect(!running.cancelHolds(other, startedAt: time))
        // The cancel still held is the later one: it holds against what
        // started up to it, or at a time not known.
        #expect(running.cancelHolds(k, startedAt: time + .seconds(1)))
        #expect(running.cancelHolds(k, startedAt: nil))
        #expect(!running.cancelHolds(k, startedAt: time + .seconds(1) + .nanoseconds(1)))
        running.forgetCancels(running.unsavedCancels)
        #expect(running.unsavedCancels.isEmpty)
        #expect(!running.cancelHolds(k, startedAt: nil))
    }

    @Test("cancels and restores of one key from two threads at once: a cancel that returned true is never undone, in memory or in the file")
    func cancelRacingRestore() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        // Many keys before the raced one, so that a restore spends a while
        // resuming the others first (written at once: 1,000 starts would
        // make 1,000 saves).
        try write(
            CooldownStateFile.encode(
                CooldownStateFile.Contents(
                    bootID: "boot-a", savedAt: BootClock.Instant(offset: .seconds(100)),
                    entries: (0..<1_000).map { i in
                        CooldownStateFile.Entry(
                            key: "a\(i)", end: BootClock.Instant(offset: .seconds(700)), duration: .seconds(600),
                            trustedEnd: nil)
                    })),
            to: path)
        let (_, _, cooldowns) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
        #expect(try cooldowns.restore() == .sameBoot(restored: 1_000))
        for round in 0..<40 {
            try cooldowns.cooldown(key: "zz", duration: .seconds(60))
            let cancelled = Locked(false)
            let group = DispatchGroup()
            DispatchQueue.global().async(group: group) { _ = try? cooldowns.restore() }
            DispatchQueue.global().async(group: group) {
                // A varied start, to land in different parts of the restore.
                usleep(UInt32(round) * 50)
                if (try? cooldowns.cancel(key: "zz")) == true { cancelled.withLock { $0 = true } }
            }
            group.wait()
            guard cancelled.value else { continue }
            #expect(cooldowns.remaining(key: "zz") == nil, "round \(round): in memory")
            let (_, _, restarted) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
            #expect(restarted.remaining(key: "zz") == nil, "round \(round): in the file")
        }
    }

    @Test("a restore that finds a later end for a running, observed cooldown moves it: same countdown, a tick at once, the end at the later end")
    func restoreMovesARunningCooldown() throws {
        let path = temporaryPath("state")
        defer { removeTemporaryDirectory(of: path) }
        // The file holds a 60 s cooldown ending at 5,060 s (saved elsewhere
        // first, then put at the path).
        let other = temporaryPath("other")
        defer { removeTemporaryDirectory(of: other) }
        let (_, _, saver) = try process(boot: .seconds(5_000), bootID: "boot-a", path: other)
        try saver.cooldown(key: "k", duration: .seconds(60))
        // This process started a 30 s one while there was no file yet.
        let (loop, center, cooldowns) = try process(boot: .seconds(5_000), bootID: "boot-a", path: path)
        let running = try cooldowns.cooldown(key: "k", duration: .seconds(30))
        let events = Locked<[String]>([])
        let observation = try center.observe(running.countdown) { event in
            switch event {
            case .tick(let tick): events.withLock { $0.append("tick \(tick.value)") }
            case .ended(let end): events.withLock { $0.append("ended, \(end.lateness) late") }
            }
        }
        try loop.advance(by: .seconds(10))
        events.withLock { $0.removeAll() }
        try write(try #require(readAll(other)), to: path)
        #expect(try cooldowns.restore() == .sameBoot(restored: 1))
        let moved = try #require(cooldowns.cooldown(key: "k"))
        #expect(moved.countdown == running.countdown)
        #expect(moved.end == BootClock.Instant(offset: .seconds(5_060)))
        #expect(moved.duration == .seconds(60))
        #expect(center.count == 1)
        try loop.advance(by: .zero)
        #expect(events.value == ["tick 50"])
        try loop.advance(by: .seconds(50) - .nanoseconds(1))
        #expect(!events.value.contains { $0.hasPrefix("ended") }, "ended before the file's end")
        try loop.advance(by: .nanoseconds(1))
        #expect(events.value.last == "ended, 0.0 seconds late")
        #expect(events.value.count == 51)
        observation.cancel()
        #expect(center.count == 0)
    }

    @Test("a cancel lets go of the countdown's observation handlers outside the cooldowns' lock")
    func cancelReleasesHandlersOutsideTheLock() throws {
        let loop = try TimerLoop.manual()
        let cooldowns = Cooldowns(center: try CountdownCenter(loop: loop))
        // A screen whose deinit cancels its own cooldown, held only by an
        // observation's handler: cancels that let go of the handler under
        // the cooldowns' lock would wait for themselves forever.
        final class Screen: Sendable {
            let cooldowns: Cooldowns
            init(_ cooldowns: Cooldowns) { self.cooldowns = cooldowns }
            deinit { _ = try? cooldowns.cancel(key: "screen") }
        }
        func holding(_ screen: Screen) -> @Sendable (CountdownEvent) -> Void { { _ in _ = screen } }
        try cooldowns.cooldown(key: "screen", duration: .seconds(30))
        let cooldown = try cooldowns.cooldown(key: "resend", duration: .seconds(60))
        let observation = try cooldowns.center.observe(cooldown.countdown, holding(Screen(cooldowns)))
        #expect(returnsOnAnotherThread { _ = try? cooldowns.cancel(key: "resend") }, "cancel(key:) did not return")
        #expect(cooldowns.all.isEmpty, "the screen's deinit cancelled its cooldown too")
        observation.cancel()
    }

    @Test("bad keys and durations are refused")
    func badInput() throws {
        let path = temporaryPath("s")
        defer { removeTemporaryDirectory(of: path) }
        let (_, center, cooldowns) = try process(boot: .seconds(1), bootID: "b", path: path)
        #expect(throws: CountdownError.invalidKey("")) { try cooldowns.cooldown(key: "", duration: .seconds(1)) }
        let long = String(repeating: "k", count: 257)
        #expect(throws: CountdownError.invalidKey(long)) { try cooldowns.cooldown(key: long, duration: .seconds(1)) }
        // The text says how long a key is, and shows its start, escaped.
        #expect(CountdownError.invalidKey("").description.hasSuffix("not an empty string"))
        let text = CountdownError.invalidKey(String(repeating: "\n", count: 1_000_000)).description
        #expect(text.utf8.count < 200 && text.contains("1000000 bytes: \"\\n\\n") && text.hasSuffix("…"), "\(text)")
        // One character of 100,001 scalars.
        let accented = CountdownError.invalidKey("e" + String(repeating: "\u{301}", count: 100_000)).description
        #expect(accented.utf8.count < 300 && accented.hasSuffix("…"), "\(accented.utf8.count) bytes")
        #expect(throws: CountdownError.invalidDuration(.zero)) { try cooldowns.cooldown(key: "a", duration: .zero) }
        #expect(throws: CountdownError.invalidDuration(.nanoseconds(1) / 2)) {
            try cooldowns.cooldown(key: "a", duration: .nanoseconds(1) / 2)
        }
        #expect(center.count == 0)
        // A path is quoted and escaped: one holding a newline stays on one line.
        #expect(CountdownError.stateFileNotFound("/tmp/a\nb").description == #"no saved cooldowns at "/tmp/a\nb""#)
    }

    @Test("the file round-trips: what is saved is what is read")
    func roundTrip() throws {
        let contents = CooldownStateFile.Contents(
            bootID: "4b1e5d50-5c9b-4b3c-8d6e-0a7d3f2e9c11", savedAt: BootClock.Instant(offset: .seconds(77)),
            entries: [
                .init(key: "sms:+86 138", end: BootClock.Instant(offset: .seconds(99)), duration: .seconds(60),
                      trustedEnd: .seconds(1_767_000_000)),
                .init(key: "验证码", end: BootClock.Instant(offset: .seconds(80)), duration: .seconds(30),
                      trustedEnd: nil),
            ])
        #expect(try CooldownStateFile.decode(CooldownStateFile.encode(contents)) == contents)
    }
}

/// A state file at a new path holding 60-second cooldowns for `keys`,
/// saved at boot time 100 s of "boot-a", then made unusable for a while
/// (it holds other bytes): its path, and the bytes it held.
func fileMadeUnreadable(holding keys: [String]) throws -> (path: String, saved: [UInt8]) {
    let path = temporaryPath("state")
    let (_, _, first) = try process(boot: .seconds(100), bootID: "boot-a", path: path)
    for key in keys { try first.cooldown(key: key, duration: .seconds(60)) }
    let saved = try #require(readAll(path))
    try write(Array("not a state file".utf8), to: path)
    return (path, saved)
}

func readAll(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let got = fread(&buffer, 1, buffer.count, file)
        if got == 0 { break }
        bytes += buffer[0..<got]
    }
    return bytes
}

func write(_ bytes: [UInt8], to path: String) throws {
    guard let file = fopen(path, "wb") else { throw SystemError(errno: .ioError, function: "fopen") }
    defer { fclose(file) }
    _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, bytes.count, file) }
}
