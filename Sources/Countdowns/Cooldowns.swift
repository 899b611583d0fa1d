import Synchronization
import TimerKit
import TrustedTime

/// Cooldowns by key, such as "resend the verification code in 60 s", that
/// survive leaving a screen and restarting the process: start one, or find
/// the one already running for that key, and it shows its true remaining
/// time wherever it is looked at again.
///
/// ```swift
/// let cooldowns = Cooldowns(center: center, file: statePath)
/// _ = try? cooldowns.restore()                      // after a restart
/// let resend = try cooldowns.cooldown(key: "sms:+8613800000000", duration: .seconds(60))
/// button.isEnabled = cooldowns.remaining(key: resend.key) == nil
/// let watching = try center.observe(resend.countdown) { event in
///     if case .ended = event { button.isEnabled = true }
/// }
/// ```
///
/// Each cooldown is a countdown of the ``CountdownCenter``, ending at a
/// boot-clock instant (the boot clock counts suspend and nobody can set
/// it), so it can be observed like any other. With a file, every start of
/// a cooldown and every cancel of one in memory (see ``cancel(key:)`` for
/// the others) saves the running cooldowns there, atomically, in a small
/// versioned and checksummed format (the same envelope as a
/// `TrustedClock`'s state). The first call of any member restores what the
/// file holds first (as ``restore()`` does, if it was not called), so that
/// nothing saved is lost and a cooldown the file holds is the one found and
/// counted; a file that cannot be read is never overwritten, except by
/// ``replaceStateFile()``. A save replaces the file with a new one, so a
/// symbolic link at the path is replaced by the file (the file it led to is
/// left as it was).
///
/// Once read, the file is not read again for a lookup (unless ``restore()``
/// is called). A save that finds it written by something else since this
/// `Cooldowns` last read or wrote it (another process, or another
/// `Cooldowns` on the same file) restores it first, as ``restore()`` does,
/// so that the cooldowns saved there are kept: two processes on one file
/// keep each other's. A cancel reaches its own `Cooldowns` only: another
/// that runs the same cooldown saves it again, so through the file a
/// cooldown can end late, never early. (A missing cooldown cannot tell a
/// cancel from a file removed or written over meanwhile.) An unsaved
/// cancel holds against what the file holds for its key from before the
/// cancel, not against a cooldown another writer started for the key
/// after it. The file is not locked: a save that another writer's
/// overtakes, between its read of the file and its write, is written over;
/// its cooldowns are back in the file at its next save (a process that ends
/// first leaves them out). In one process, keep
/// one `Cooldowns` for as long as its cooldowns should run (beside the
/// center, not in a screen that comes and goes): a second one made on the
/// same file while the first lives restores a countdown of its own for each
/// saved cooldown, so each end is heard once from each.
///
/// **After a reboot** the boot clock starts again, so a saved boot-clock end
/// means nothing. If the `TrustedClock` given has been synced in this boot,
/// and the cooldown was saved with its end in server time (the clock was
/// synced at that save or an earlier one, or the cooldown was restored from
/// a file that held that end: a save before the clock syncs, or after a
/// reset, keeps it), it ends at that
/// end in server time, allowing for the error bounds of the readings at the
/// save and now: it may end that much later, never earlier. Otherwise
/// it resumes with the time it had left when it was saved: it may end later
/// than it should, never earlier. Either way it has at most the time it had
/// left when saved: server time that reads earlier than at the save (a
/// server that was wrong then, or is now) does not lengthen it. (A restart in the same
/// boot needs neither: the boot-clock end still holds, and it too ends at
/// most its duration after the save.)
///
/// **Keys** are told apart by their UTF-8 bytes, as the file holds them and
/// as Linux tells file names apart, not by Swift's `String` equality: "é"
/// (U+00E9) and "e" followed by U+0301 are two keys, each saved and found
/// with its own bytes. Normalize keys first if such pairs should be one.
///
/// Thread safety: every member may be used from any thread. Saves are
/// written one at a time, each with the cooldowns running when its turn
/// comes, so the file ends holding the latest.
public final class Cooldowns: Sendable {
    /// A running cooldown.
    ///
    /// Two are equal when every property is, the keys compared by their
    /// UTF-8 bytes.
    public struct Cooldown: Sendable, Hashable {
        /// Its key, with the bytes it was started (or saved) with.
        public var key: String
        /// Its countdown in the center: observe it for ticks and the end.
        public var countdown: Countdown
        /// How long it lasts in all (as started; restored from a file, in
        /// whole nanoseconds rounded down, at most `Int64.max` of them).
        public var duration: Duration
        /// When it ends, on the boot clock.
        public var end: BootClock.Instant

        /// Whether every property is equal, the keys byte for byte.
        public static func == (lhs: Cooldown, rhs: Cooldown) -> Bool {
            CooldownKey(lhs.key) == CooldownKey(rhs.key) && lhs.countdown == rhs.countdown
                && lhs.duration == rhs.duration && lhs.end == rhs.end
        }

        /// Hashes every property, the key by its bytes.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(CooldownKey(key))
            hasher.combine(countdown)
            hasher.combine(duration)
            hasher.combine(end)
        }
    }

    /// What ``restore()`` did.
    public enum RestoreOutcome: Sendable, Hashable {
        /// Saved in this boot: the cooldowns still running were restored at
        /// their saved ends.
        case sameBoot(restored: Int)
        /// Saved in another boot: the running ones were restored from server
        /// time (the trusted clock was synced) or with the time they had
        /// left when saved (it was not); the counts say how many of each.
        case anotherBoot(fromServerTime: Int, fromTimeLeft: Int)
    }

    /// The center the cooldowns count down in.
    public let center: CountdownCenter
    /// Where they are saved, if anywhere.
    public let file: String?
    /// The clock that places them in server time for a reboot, if any.
    public let trustedClock: TrustedClock?
    private let bootID: String?
    private let running = ThreadLocked(RunningCooldowns())
    /// Held for every read and write of the file, so that saves from
    /// several threads land in the order they took the running cooldowns
    /// (the last save holds the latest). Guards whether the file was read
    /// (or found missing), so that saving cannot lose what it held.
    private let fileAccess = ThreadLocked(false)
    /// Set, under `fileAccess`, once the file has been read (or found
    /// missing), and never cleared: a call that sees it set reads nothing
    /// and takes no lock for the file.
    private let fileIsRead = Atomic<Bool>(false)
    /// Set, under `fileAccess`, once a lookup has tried to read the file:
    /// lookups try once, and leave a file that cannot be read to a start, a
    /// cancel, ``save()`` or ``restore()``, which report its error.
    private let lookupTriedFile = Atomic<Bool>(false)
    /// The file as this `Cooldowns` last read, wrote or missed it, set and
    /// read under `fileAccess`: a save that finds something else there
    /// reads it again first (see ``save()``).
    private let knownFile = ThreadLocked(KnownFile.unknown)

    /// What a `Cooldowns` knows of its file: its bytes, compared whole (a
    /// file's times can stay the same over several writes, and an inode
    /// number freed by one rename can come back with the next).
    private enum KnownFile: Equatable {
        /// Not read, written or found missing yet.
        case unknown
        /// There was none.
        case missing
        /// These bytes were read and used, or written.
        case contents([UInt8])
    }

    /// Cooldowns counting down in `center`, saved to `file` if given.
    ///
    /// - Parameters:
    ///   - center: the center they count down in: one on the boot clock, as
    ///     their ends are boot-clock instants (on a trusted center, a
    ///     re-sync that moves server time would move them too).
    ///   - file: where they are saved and restored from; `nil`: nowhere.
    ///   - trustedClock: a clock on the same loop's clocks, whose server
    ///     time carries the cooldowns across a reboot once it is synced.
    ///   - bootID: this boot's id (by default the trusted clock's readings',
    ///     else the machine's); tests give one to play a reboot. Any string
    ///     works, the empty one too: one that is not short printable ASCII,
    ///     or is empty, is saved as a hash.
    public convenience init(
        center: CountdownCenter, file: String? = nil, trustedClock: TrustedClock? = nil,
        bootID: String? = nil
    ) {
        self.init(
            center: center, file: file, trustedClock: trustedClock,
            knownBootID: bootID ?? trustedClock?.readings.bootID ?? (try? BootClock.bootID()))
    }

    /// Cooldowns whose boot id is `knownBootID`, `nil` if none could be
    /// read (then every file is read by the rule for a reboot, except one
    /// written while they run).
    init(center: CountdownCenter, file: String?, trustedClock: TrustedClock?, knownBootID: String?) {
        self.center = center
        self.file = file
        self.trustedClock = trustedClock
        self.bootID = knownBootID
    }

    // MARK: Cooldowns

    /// The cooldown running for `key`, or a new one of `duration` starting
    /// now (saved to the file at once, if there is one).
    ///
    /// If the file has not been read yet, it is restored first, as by the
    /// first ``save()``, so that a cooldown it holds for `key` is the one
    /// found: the cooldown returned is the one that runs, with its end (a
    /// save that reads another writer's later end for the key moves the
    /// same countdown there; ``cooldown(key:)`` then gives the new end). A
    /// file that cannot be read is left as it is: the cooldown is found or
    /// started in memory only, and a new one throws the file's error.
    ///
    /// - Throws: ``CountdownError/invalidKey(_:)``,
    ///   ``CountdownError/invalidDuration(_:)``, or an error of ``save()``,
    ///   in which case the cooldown still runs in memory, and is written by
    ///   the next save that succeeds: a later call that finds it saves
    ///   nothing, so call ``save()`` to try again.
    @discardableResult
    public func cooldown(key: String, duration: Duration) throws(CountdownError) -> Cooldown {
        guard !key.utf8.isEmpty, key.utf8.count <= CooldownStateFile.maximumKeyLength else {
            throw .invalidKey(key)
        }
        guard duration.saturatingNanoseconds >= 1 else { throw .invalidDuration(duration) }
        let readError = readFileIfNotRead()
        let (cooldown, started) = running.withLock { running -> (Cooldown, Bool) in
            let key = CooldownKey(key)
            if let current = running.cooldowns[key], center.contains(current.countdown) { return (current, false) }
            // In whole nanoseconds, rounded up: the file holds whole
            // nanoseconds, and a restored end must not come earlier.
            let end = Self.withinRange(center.loop.now(.boot) + .nanoseconds(duration.nanosecondsRoundedUp))
            let cooldown = Cooldown(
                key: key.string, countdown: center.add(endingAt: end), duration: duration, end: end)
            running.cooldowns[key] = cooldown
            running.forgetServerEnd(of: key)
            return (cooldown, true)
        }
        if started, file != nil {
            // The save would read the file again, and fail again.
            if let readError { throw readError }
            try save()
        }
        return cooldown
    }

    /// The cooldown running for `key`, if any.
    ///
    /// If the file has not been read yet, it is restored first, as by the
    /// first ``save()``, so that a cooldown it holds is found. A file that
    /// cannot be read is left as it is, and only the cooldowns in memory are
    /// looked at (``restore()`` tells what is wrong with it).
    public func cooldown(key: String) -> Cooldown? {
        readFileForLookup()
        return running.withLock { running in
            let key = CooldownKey(key)
            guard let cooldown = running.cooldowns[key] else { return nil }
            guard center.contains(cooldown.countdown) else {
                running.cooldowns[key] = nil
                return nil
            }
            return cooldown
        }
    }

    /// The time left of the cooldown running for `key`; `nil` if none runs.
    /// Reads the file first, as ``cooldown(key:)`` does.
    public func remaining(key: String) -> Duration? {
        cooldown(key: key).flatMap { center.remaining($0.countdown) }
    }

    /// Every cooldown still running. Reads the file first, as
    /// ``cooldown(key:)`` does.
    public var all: [Cooldown] {
        readFileForLookup()
        return runningCooldowns()
    }

    /// Every cooldown still running in memory.
    private func runningCooldowns() -> [Cooldown] {
        running.withLock { running in running.dropEnded(center) }
    }

    /// Ends the cooldown for `key` now (saved at once, if there is a file).
    /// Returns whether one was running.
    ///
    /// If the file has not been read yet, it is restored first, as by the
    /// first ``save()``, so that a cooldown it holds for `key` is cancelled
    /// too rather than brought back by the save.
    ///
    /// Until a save has written the file without it, the cancel holds
    /// against what the file holds for `key` from before the cancel (a
    /// cooldown that another writer of the file started for the key after
    /// it runs): no read of the file brings that cooldown back (a restore
    /// skips it, and a start for the key runs to its own end, not to the
    /// file's). That covers a file that
    /// cannot be read when the cancel is made, whose cooldown for the key
    /// stays cancelled once it can be, and a save that fails: calling
    /// `cancel(key:)` again, or ``save()``, saves the file without it (and
    /// so does a ``restore()`` that skipped it). A cancel of a key with no
    /// cooldown in memory (none ran, or one that ended was let go of) saves
    /// only in those two cases: otherwise the file holds at most an ended
    /// cooldown for it, which the next save drops.
    ///
    /// - Throws: the error of a file that cannot be read yet, or an error of
    ///   ``save()``; the cooldown has ended all the same.
    @discardableResult
    public func cancel(key: String) throws(CountdownError) -> Bool {
        var readError = readFileIfNotRead()
        let key = CooldownKey(key)
        let (removed, unsaved) = running.withLock { running -> (Cooldown?, Bool) in
            let removed = running.cooldowns.removeValue(forKey: key)
            running.forgetServerEnd(of: key)
            // The file may hold the key if it ran (a save wrote it), if the
            // file could not be read, or if an earlier cancel of it is not
            // saved yet; otherwise there is nothing to hold against it.
            guard file != nil, removed != nil || readError != nil || running.isCancelUnsaved(key) else {
                return (removed, false)
            }
            running.noteCancel(of: key, at: center.loop.now(.boot))
            return (removed, true)
        }
        // Removed from the center after the lock: the center lets go of the
        // countdown's observation handlers there, and one may hold the last
        // reference to an object whose deinit calls these cooldowns.
        let cancelled = removed.map { center.remove($0.countdown) } ?? false
        // Another call may have read the file since: it can be used now, and
        // the cancel is saved (that read may have brought the cooldown back
        // before the cancel took it out).
        if readError != nil && fileIsRead.load(ordering: .acquiring) { readError = nil }
        // The save would read the file again, and fail again.
        if let readError { throw readError }
        if unsaved { try save() }
        return cancelled
    }

    // MARK: The file

    /// Saves the running cooldowns to the file, atomically. If the file has
    /// not been read yet, it is restored first, so that its cooldowns are
    /// kept; so it is, too, if something else wrote it since this
    /// `Cooldowns` last read or wrote it (another process, or another
    /// `Cooldowns` on the same file), so that the cooldowns saved there are
    /// kept rather than written over (see ``restore()`` for how they join
    /// the running ones).
    ///
    /// - Throws: ``CountdownError/noStateFile``, an error of ``restore()``
    ///   (a file that cannot be read is left as it is),
    ///   ``CountdownError/tooManyCooldowns(_:)``, or
    ///   ``CountdownError/system(_:)`` naming the failed call; the file is
    ///   then unchanged.
    public func save() throws(CountdownError) {
        guard file != nil else { throw .noStateFile }
        try withFile { (fileRead: inout Bool) throws(CountdownError) in
            try readIfNotRead(&fileRead)
            try readIfWrittenElsewhere(&fileRead)
            try write()
        }
    }

    /// Runs `body` holding `fileAccess`, and notes in `fileIsRead` a file
    /// that `body` read.
    private func withFile<Result, Failure: Error>(
        _ body: (inout Bool) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try fileAccess.withLock { (fileRead: inout Bool) throws(Failure) in
            defer { if fileRead { fileIsRead.store(true, ordering: .releasing) } }
            return try body(&fileRead)
        }
    }

    /// Restores the file if it has not been read yet (a missing file counts
    /// as read), as the first save does; returns the error of a file that
    /// cannot be read, which stays unread and as it is. `nil` without a
    /// file.
    private func readFileIfNotRead() -> CountdownError? {
        guard file != nil, !fileIsRead.load(ordering: .acquiring) else { return nil }
        return withFile { (fileRead: inout Bool) -> CountdownError? in
            do throws(CountdownError) {
                try readIfNotRead(&fileRead)
            } catch {
                return error
            }
            return nil
        }
    }

    /// Restores the file for a lookup, if it has not been read and no
    /// lookup has tried yet; a file that cannot be read is left as it is.
    private func readFileForLookup() {
        guard file != nil, !fileIsRead.load(ordering: .acquiring),
            !lookupTriedFile.load(ordering: .acquiring)
        else { return }
        withFile { (fileRead: inout Bool) in
            guard !lookupTriedFile.load(ordering: .relaxed) else { return }
            // Set once the read is over: a lookup that finds it set has
            // waited for the file's lock, and finds what the read restored.
            defer { lookupTriedFile.store(true, ordering: .releasing) }
            try? readIfNotRead(&fileRead)
        }
    }

    /// Restores the file unless it has been read (a missing file counts as
    /// read); holding `fileAccess`.
    private func readIfNotRead(_ fileRead: inout Bool) throws(CountdownError) {
        guard !fileRead else { return }
        do throws(CountdownError) {
            try restore(fileRead: &fileRead)
        } catch .stateFileNotFound {
            fileRead = true
            knownFile.withLock { $0 = .missing }
        }
    }

    /// Restores the file again if it is not the one this `Cooldowns` last
    /// read or wrote: another writer's, or none (removed since), or, if it
    /// cannot be read now, whatever is there (the restore reports why).
    /// Holding `fileAccess`, with the file read.
    private func readIfWrittenElsewhere(_ fileRead: inout Bool) throws(CountdownError) {
        guard let file else { return }
        let found: KnownFile
        do {
            found = .contents(try AtomicFile.read(file, limit: CooldownStateFile.maximumFileSize))
        } catch Errno.noSuchFileOrDirectory {
            found = .missing
        } catch {
            found = .unknown
        }
        if found != .unknown, found == knownFile.withLock({ $0 }) { return }
        do throws(CountdownError) {
            try restore(fileRead: &fileRead, writtenMeanwhile: true)
        } catch .stateFileNotFound {
            knownFile.withLock { $0 = .missing }
        }
    }

    /// Saves the running cooldowns over whatever the file holds, readable
    /// or not: the way on after ``restore()`` reported a file that cannot be
    /// used. It replaces a regular file or a symbolic link (not the file the
    /// link leads to), as every save does; something else at the path (a
    /// FIFO, a device such as `/dev/null`, a socket, a directory) is left as
    /// it is, and the call throws: remove it first.
    ///
    /// - Throws: ``CountdownError/noStateFile``,
    ///   ``CountdownError/tooManyCooldowns(_:)``, ``CountdownError/system(_:)``
    ///   (`EINVAL` from `open` for a path that names something other than a
    ///   regular file, a link or a directory, `EISDIR` for a directory, or
    ///   the failed call of the write: `open`, `write`, `fsync`, `rename`, ...).
    public func replaceStateFile() throws(CountdownError) {
        guard file != nil else { throw .noStateFile }
        try withFile { (fileRead: inout Bool) throws(CountdownError) in
            try write()
            fileRead = true
        }
    }

    /// Writes the running cooldowns, taken now, to the file; called holding
    /// `fileAccess`.
    private func write() throws(CountdownError) {
        guard let file else { throw .noStateFile }
        let now = center.loop.now(.boot)
        // The cancels not saved yet, taken with the running cooldowns: the
        // file written holds what each of them left (nothing for the key,
        // or a cooldown started for it since). Each cooldown with its
        // server-time end: the earlier of the one read now, if
        // the trusted clock is synced, and the one known for it (from the
        // file it was restored from, or an earlier save), each the latest
        // the end can be. So a save before the clock syncs, or after a
        // reset, keeps it, and one after a sync keeps the closer one (a
        // cooldown restored from the time it had left ends later on the
        // boot clock than in server time).
        let (running, cancels) = self.running.withLock { running in
            (running.dropEnded(center).map { ($0, running.serverEnd(of: $0)) }, running.unsavedCancels)
        }
        guard running.count <= CooldownStateFile.maximumEntries else { throw .tooManyCooldowns(running.count) }
        let entries = running.sorted { CooldownKey.precedes($0.0.key, $1.0.key) }.map { cooldown, known in
            CooldownStateFile.Entry(
                key: cooldown.key, end: cooldown.end, duration: cooldown.duration,
                trustedEnd: [serverTime(atBoot: cooldown.end), known].compactMap { $0 }.min())
        }
        let bytes = CooldownStateFile.encode(
            CooldownStateFile.Contents(bootID: bootID, savedAt: now, entries: entries))
        do {
            try AtomicFile.write(bytes, to: file)
            knownFile.withLock { $0 = .contents(bytes) }
        } catch {
            throw .system(error)
        }
        self.running.withLock { running in
            if !cancels.isEmpty { running.forgetCancels(cancels) }
            // The ends written are known from now on, for the cooldowns
            // that still end where they were written.
            for entry in entries {
                guard let trustedEnd = entry.trustedEnd else { continue }
                running.noteServerEnd(trustedEnd, of: CooldownKey(entry.key), endingAt: entry.end)
            }
        }
    }

    /// Restores the cooldowns saved in the file (see the rule for a reboot
    /// above). A cooldown already running for a key keeps the later end of
    /// the two: if the file's is later, the running cooldown is moved to it
    /// in place, keeping its ``Cooldown/countdown`` and its observations:
    /// one whose displayed value changes ticks at once with the new value,
    /// and each hears the end at the new end (the ``Cooldown`` returned
    /// before holds the old ``Cooldown/end``; ``cooldown(key:)`` gives the
    /// new one, with the file's ``Cooldown/duration``). Cooldowns that ended
    /// meanwhile are not restored, nor are those of keys cancelled since
    /// the last save that succeeded (see ``cancel(key:)``): a restore that
    /// finds such cooldowns in the file saves it without them.
    ///
    /// - Throws: ``CountdownError/noStateFile``,
    ///   ``CountdownError/stateFileNotFound(_:)``,
    ///   ``CountdownError/notAStateFile``, ``CountdownError/stateFileTruncated``,
    ///   ``CountdownError/stateFileCorrupt(_:)``,
    ///   ``CountdownError/stateFileFromNewerVersion(_:)`` or
    ///   ``CountdownError/system(_:)`` (`EINVAL` from `open` for a path that
    ///   is not a regular file, such as a FIFO, whose read could block for
    ///   good): a file that cannot be used changes nothing, and is left as
    ///   it is.
    @discardableResult
    public func restore() throws(CountdownError) -> RestoreOutcome {
        guard file != nil else { throw .noStateFile }
        return try withFile { (fileRead: inout Bool) throws(CountdownError) in
            try restore(fileRead: &fileRead)
        }
    }

    /// ``restore()``, holding `fileAccess`.
    ///
    /// `writtenMeanwhile`: the file is not the one this `Cooldowns` last
    /// read or wrote, so it was written in this boot, whose boot-clock ends
    /// it holds; without a boot id of its own to compare, this `Cooldowns`
    /// reads it as a file of this boot (the rule for a reboot, applied at
    /// each save that reads another writer's file, would lengthen the
    /// other's cooldowns each time).
    @discardableResult
    private func restore(fileRead: inout Bool, writtenMeanwhile: Bool = false) throws(CountdownError)
        -> RestoreOutcome
    {
        guard let file else { throw .noStateFile }
        let bytes: [UInt8]
        do {
            bytes = try AtomicFile.read(file, limit: CooldownStateFile.maximumFileSize)
        } catch Errno.noSuchFileOrDirectory {
            throw .stateFileNotFound(file)
        } catch {
            throw .system(error)
        }
        let contents = try CooldownStateFile.decode(bytes)
        let now = center.loop.now(.boot)
        let thisBoot =
            bootID.map { contents.bootID == storedBootID($0, width: CooldownStateFile.bootIDSize) }
            ?? writtenMeanwhile
        guard thisBoot else {
            let (outcome, skippedCancels) = restoreAfterReboot(contents, now: now)
            fileRead = true
            knownFile.withLock { $0 = .contents(bytes) }
            // Saved at once on this boot, so that a second restart in this
            // boot restores the same ends rather than applying the rule
            // again, and without the cooldowns cancelled since the file's
            // last save. If this save fails, the file keeps the other boot's
            // cooldowns, and the next save or restart applies the rule once
            // more (which never shortens a cooldown).
            if bootID != nil || skippedCancels { try? write() }
            return outcome
        }
        guard contents.savedAt <= now else {
            throw .stateFileCorrupt("saved later than the boot clock's current reading")
        }
        var restored = 0
        // Cooldowns the file holds that were cancelled since its last save.
        var cancelled = 0
        for entry in contents.entries {
            // No save writes an end more than its duration after the save
            // (a cooldown starts before the save that holds it; the 1 ns is
            // what rounding an end up to a whole nanosecond adds to a
            // duration that the file holds rounded down). One that does, in
            // a file made by hand, ends that long after the save, as a
            // cooldown restored after a reboot has at most its duration left.
            let end = min(entry.end, contents.savedAt + entry.duration + .nanoseconds(1))
            // When it started, at the latest (a cooldown another writer
            // started after a cancel of its key here is not the one
            // cancelled): the 1 ns is the most that rounding its end up,
            // and its duration down, can have put between them.
            let start = entry.end - entry.duration - .nanoseconds(1)
            guard end > now else {
                if running.withLock({ $0.cancelHolds(CooldownKey(entry.key), startedAt: start) }) { cancelled += 1 }
                continue
            }
            switch resume(
                key: entry.key, end: end, duration: entry.duration, serverEnd: entry.trustedEnd, startedAt: start)
            {
            case .resumed: restored += 1
            case .runsLonger: break
            case .cancelled: cancelled += 1
            }
        }
        fileRead = true
        knownFile.withLock { $0 = .contents(bytes) }
        // Saved without them, so that a restart, or a reboot, which can only
        // count from the time each had left when saved, does not bring them
        // back. (Only then: otherwise the file holds what runs.) If this
        // save fails, they stay cancelled here, and the next save drops them.
        if cancelled > 0 { try? write() }
        return .sameBoot(restored: restored)
    }

    /// The rule for a reboot (see the type's doc); whether it skipped a
    /// cooldown cancelled since the file's last save.
    private func restoreAfterReboot(_ contents: CooldownStateFile.Contents, now: BootClock.Instant)
        -> (RestoreOutcome, skippedCancels: Bool)
    {
        // The latest end against the earliest now: the most the cooldown
        // can have left, whatever the errors of both readings within their
        // bounds.
        let serverNow = earliestServerTimeNow()
        var fromServer = 0
        var fromTimeLeft = 0
        var skippedCancels = false
        for entry in contents.entries {
            // What it had left when saved (nor more than its duration): at
            // least what it has now, since time has passed since the save.
            let leftWhenSaved = min(entry.end - contents.savedAt, entry.duration)
            let fromServerTime: Bool
            let left: Duration
            if let serverNow, let trustedEnd = entry.trustedEnd {
                // Never more than it had left when saved: server time that
                // reads earlier than when it was saved (a server wrong
                // then, or now) must not lengthen it.
                (fromServerTime, left) = (true, min(trustedEnd - serverNow, leftWhenSaved))
            } else {
                // Never less than it has now.
                (fromServerTime, left) = (false, leftWhenSaved)
            }
            guard left > .zero else { continue }
            // Its start on the other boot's clock means nothing on this
            // one: a cancel of its key holds against it.
            switch resume(
                key: entry.key, end: now + left, duration: entry.duration, serverEnd: entry.trustedEnd,
                startedAt: nil)
            {
            case .resumed:
                if fromServerTime { fromServer += 1 } else { fromTimeLeft += 1 }
            case .runsLonger: break
            case .cancelled: skippedCancels = true
            }
        }
        return (.anotherBoot(fromServerTime: fromServer, fromTimeLeft: fromTimeLeft), skippedCancels)
    }

    /// `end`, or the last instant the boot clock's nanoseconds reach if it
    /// lies beyond: where the countdown's timer and the file put it. Kept
    /// the same in memory, a cooldown restored in another boot has at least
    /// the time it had left when saved.
    private static func withinRange(_ end: BootClock.Instant) -> BootClock.Instant {
        min(end, BootClock.Instant(offset: .nanoseconds(Int64.max)))
    }

    /// What ``resume(key:end:duration:serverEnd:startedAt:)`` did with a cooldown of the file.
    private enum Resumed {
        /// It runs, as a new cooldown or moved to its later end.
        case resumed
        /// One that runs for the key ends as late already.
        case runsLonger
        /// The key was cancelled since the file was last saved.
        case cancelled
    }

    /// Runs a restored cooldown, unless its key was cancelled since the
    /// last save, or one for the key ends as late already. One that ends
    /// earlier is moved to the later end in place: the same countdown, whose
    /// observations go on and hear its end there. A new cooldown run keeps
    /// `serverEnd`, the server-time end the file gave it, for later saves;
    /// a moved one has none known.
    private func resume(
        key: String, end: BootClock.Instant, duration: Duration, serverEnd: Duration?,
        startedAt start: BootClock.Instant?
    ) -> Resumed {
        let end = Self.withinRange(end)
        let key = CooldownKey(key)
        return running.withLock { running in
            // Under the lock a cancel takes: one made while this restore
            // reads is seen here, or comes after and ends what this runs.
            if running.cancelHolds(key, startedAt: start) { return .cancelled }
            if let current = running.cooldowns[key], center.contains(current.countdown) {
                guard current.end < end else { return .runsLonger }
                if center.moveEnd(of: current.countdown, to: end) {
                    running.cooldowns[key] = Cooldown(
                        key: key.string, countdown: current.countdown, duration: duration, end: end)
                    // None known: the file's bounds its own cooldown's true
                    // end, not this one's, which may lie later (one the file
                    // holds from its time left after a reboot ends later on
                    // the boot clock than in server time). The next save
                    // that can read server time places it.
                    running.noteServerEnd(nil, of: key, endingAt: end)
                    return .resumed
                }
                // It ended meanwhile (on the loop's thread): a new one.
            }
            running.cooldowns[key] = Cooldown(
                key: key.string, countdown: center.add(endingAt: end), duration: duration, end: end)
            running.noteServerEnd(serverEnd, of: key, endingAt: end)
            return .resumed
        }
    }

    /// The latest server time a boot-clock instant can be, if the trusted
    /// clock is synced: its reading plus its error bound. Saved as a
    /// cooldown's end, so that no error of the reading within its bound
    /// ends the cooldown early after a reboot.
    private func serverTime(atBoot instant: BootClock.Instant) -> Duration? {
        // One reading, which says whether it is synced: a reset between two
        // would give the wall clock's time with no bound.
        guard let time = trustedClock?.time(atBoot: instant), time.isSynced, let bound = time.errorBound
        else { return nil }
        return time.sinceEpoch.addingSaturating(bound)
    }

    /// The earliest server time it can be now, if the trusted clock is
    /// synced: its reading less its error bound.
    private func earliestServerTimeNow() -> Duration? {
        guard let time = trustedClock?.now, time.isSynced, let bound = time.errorBound else { return nil }
        return time.sinceEpoch.subtractingSaturating(bound)
    }
}
