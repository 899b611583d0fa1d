
import TimerKit

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
    /// either the old file or the new one, never a mix. (A directory the
    /// process may write in but not read cannot be opened to flush: the save
    /// succeeds all the same, and a crash soon after may bring back the old
    /// file.)
    ///
    /// The file holds up to 64 samples: a clock that keeps more saves the
    /// one in use and the 63 most recent others.
    ///
    /// The file is small (136 bytes plus 48 per sample) and binary: magic,
    /// format version, length, boot id, the fields, and a CRC-32 (the layout
    /// is documented in TrustedClockStateFile.swift). The checksum finds
    /// damage, not edits: whoever can write the file can make a restore
    /// read any server time, so keep it where the user the clock guards
    /// against cannot write.
    ///
    /// It replaces only a state file of its own kind: another kind of file
    /// at `path`, or a state file of a newer format version (which a newer
    /// version of TimerKit saved), is left as it is, and the call throws.
    /// A truncated or corrupt state file is replaced. To save over another
    /// file, remove it first. A symbolic link at `path` is replaced by the
    /// file; the file it led to is left as it was (and checked as above).
    ///
    /// - Throws: ``TrustedTimeError/notAStateFile`` or
    ///   ``TrustedTimeError/stateFileFromNewerVersion(_:)`` for a file it
    ///   does not replace, ``TrustedTimeError/system(_:)`` naming the failed
    ///   call (`stat`, `open` or `read` of the file there, which must be a
    ///   regular file it can read; `open`, `write`, `fsync`, `close`,
    ///   `rename`) and its errno; the file at `path` is then unchanged.
    public func save(to path: String) throws(TrustedTimeError) {
        try checkReplaceable(path)
        do {
            try AtomicFile.write(encodedState(), to: path)
        } catch {
            throw .system(error)
        }
    }

    /// Throws unless the file at `path`, if any, is a state file of this
    /// kind and of a format this version reads (truncated or corrupt ones
    /// included): what ``save(to:)`` may replace.
    private func checkReplaceable(_ path: String) throws(TrustedTimeError) {
        let bytes: [UInt8]
        do {
            bytes = try AtomicFile.read(path, limit: TrustedClockStateFile.maximumFileSize)
        } catch Errno.noSuchFileOrDirectory {
            return
        } catch {
            throw .system(error)
        }
        do {
            _ = try TrustedClockStateFile.decode(bytes)
        } catch .notAStateFile {
            throw .notAStateFile
        } catch .stateFileFromNewerVersion(let version) {
            throw .stateFileFromNewerVersion(version)
        } catch {
            return  // its own kind, truncated or corrupt: replaced
        }
    }

    /// Restores a state saved by ``save(to:)``.
    ///
    /// Saved in this boot: the samples join the clock's (the best one wins,
    /// as after a sync) and trusted time continues without a new sync, its
    /// error bound grown by the drift allowance for the time since. If the
    /// sample in use becomes another, server time moves with it, as after
    /// a sync, and the wall clock is judged against the new sample (the
    /// move is not a wall-clock change); if it stays the same, as when the
    /// file holds no samples, trusted time does not move, and neither do
    /// the countdowns of a center on the clock. A
    /// wall-clock change the file holds as pending comes back unless the
    /// clock has a sample of its own from after the save: a sync ends a
    /// pending change. Saved in another boot: nothing is restored
    /// (``RestoreOutcome/fromAnotherBoot``).
    ///
    /// A file that cannot be used changes nothing and throws:
    /// ``TrustedTimeError/stateFileNotFound(_:)``,
    /// ``TrustedTimeError/notAStateFile`` (another kind of file),
    /// ``TrustedTimeError/stateFileTruncated``,
    /// ``TrustedTimeError/stateFileFromNewerVersion(_:)``,
    /// ``TrustedTimeError/stateFileCorrupt(_:)`` (bad checksum or values), or
    /// ``TrustedTimeError/system(_:)`` for a read error (`EINVAL` from `open`
    /// for a path that is not a regular file: a FIFO or a device is refused
    /// rather than read, which could block for good).
    @discardableResult
    public func restore(from path: String) throws(TrustedTimeError) -> RestoreOutcome {
        let bytes: [UInt8]
        do {
            bytes = try AtomicFile.read(path, limit: TrustedClockStateFile.maximumFileSize)
        } catch Errno.noSuchFileOrDirectory {
            throw .stateFileNotFound(path)
        } catch {
            throw .system(error)
        }
        return try restore(encoded: bytes)
    }

    /// The saved form of the clock's state.
    func encodedState() -> [UInt8] {
        // The state first, the clocks after: every time in the state was
        // read before the save's, so that a sync on another thread between
        // the two cannot put a sample received after the save time into
        // the file (which a restore refuses).
        let snapshot = state.withLock { $0 }
        let boot = readings.boot
        let wall = readings.wall
        let bootID = readings.bootID
        return TrustedClockStateFile.encode(
            TrustedClockStateFile.Contents(
                bootID: bootID, savedAtBoot: boot, savedAtWall: wall,
                acceptedOffset: snapshot.acceptedOffset,
                unsyncedBaseline: snapshot.unsyncedBaseline,
                pendingChange: snapshot.pendingChange,
                samples: Self.samplesToSave(snapshot.samples, best: snapshot.best)))
    }

    /// The samples a state file holds: all of them, or, when the clock keeps
    /// more than a file holds (``Configuration/maximumSamples`` above 64),
    /// the one in use and the most recent others, in the clock's order: a
    /// restore then uses the sample the clock used.
    static func samplesToSave(_ samples: [TimeSample], best: TimeSample?) -> [TimeSample] {
        let room = TrustedClockStateFile.maximumSamples
        guard samples.count > room else { return samples }
        var kept = Array(samples.suffix(room))
        // The best sample, if not among the most recent, came before them all.
        if let best, !kept.contains(best) {
            kept.removeFirst()
            kept.insert(best, at: 0)
        }
        return kept
    }

    /// Restores from the saved form; changes nothing if it throws.
    func restore(encoded bytes: [UInt8]) throws(TrustedTimeError) -> RestoreOutcome {
        let contents = try TrustedClockStateFile.decode(bytes)
        guard let bootID = readings.bootID,
            contents.bootID == storedBootID(bootID, width: TrustedClockStateFile.bootIDSize)
        else {
            state.withLock { state in
                if state.best == nil { state.staleStateRejected = true }
            }
            return .fromAnotherBoot
        }
        let boot = readings.boot
        guard contents.savedAtBoot <= boot else {
            throw .stateFileCorrupt("saved later than the boot clock's current reading")
        }
        let bestChanged = state.withLock { state in
            // A sync since the save ended the change the file holds as
            // pending (a sync ends a pending change).
            // (No sample in the file was received after the save: decode
            // refuses such a file.)
            let syncedSinceSave = state.samples.contains { $0.receivedAt > contents.savedAtBoot }
            let previous = state.best
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
            // The accepted offset is the clock's own, against the sample it
            // used, or else the file's, against the file's: if the sample in
            // use is now another, server time moved by the difference
            // between the two, and the wall clock did not (as after a sync).
            if let accepted = state.acceptedOffset {
                state.acceptedOffset = movedOffset(accepted, from: previous, to: state.best, at: boot)
            } else if let accepted = contents.acceptedOffset {
                state.acceptedOffset = movedOffset(
                    accepted, from: bestSample(of: contents.samples), to: state.best, at: boot)
            }
            if state.unsyncedBaseline == nil { state.unsyncedBaseline = contents.unsyncedBaseline }
            if state.pendingChange == nil && !syncedSinceSave { state.pendingChange = contents.pendingChange }
            return state.best != previous
        }
        // Only a new sample in use moves trusted time: a restore that leaves
        // an unsynced clock unsynced (a file with no samples) changes
        // nothing that the clock's observers count from.
        if bestChanged { samplesChanged() }
        return .restored(samples: contents.samples.count)
    }
}
