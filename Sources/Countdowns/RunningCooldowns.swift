import TimerKit

/// The running cooldowns of a ``Cooldowns``, and its cancels that the file
/// may not know of yet: one lock for both, so that a cancel, a restore
/// resuming the same key, and a save taking what to write see each other
/// whole.
struct RunningCooldowns {
    var cooldowns: [CooldownKey: Cooldowns.Cooldown] = [:]
    /// Keys cancelled since the last save that succeeded, each with the
    /// number of its last cancel. A read of the file skips what it holds for
    /// such a key from before the cancel (see ``cancelHolds(_:startedAt:)``).
    /// A save forgets the cancels it took with the cooldowns it wrote,
    /// unless the key was cancelled again meanwhile.
    private(set) var unsavedCancels: [CooldownKey: UInt64] = [:]
    private var cancelsMade: UInt64 = 0
    /// When each of the unsaved cancels was made, on the boot clock.
    private var cancelTimes: [CooldownKey: BootClock.Instant] = [:]
    /// The server-time end known for a cooldown, with its boot-clock end:
    /// the one a state file gave it when it was restored, or the one a save
    /// wrote for it. A save made while the trusted clock is not synced
    /// writes it, and one made while it is writes the earlier of it and its
    /// own reading. A cooldown of the key with another end (started or
    /// moved since) has none of it.
    private var serverEnds: [CooldownKey: (end: BootClock.Instant, serverEnd: Duration)] = [:]

    func isCancelUnsaved(_ key: CooldownKey) -> Bool {
        unsavedCancels[key] != nil
    }

    mutating func noteCancel(of key: CooldownKey, at time: BootClock.Instant) {
        cancelsMade += 1
        unsavedCancels[key] = cancelsMade
        cancelTimes[key] = time
    }

    /// Whether an unsaved cancel of `key` holds against a cooldown of the
    /// file that started at `start` on this boot's clock (`nil`: not known,
    /// as for a file of another boot): it does, unless the cooldown started
    /// after the cancel, a new one that another writer of the file started.
    func cancelHolds(_ key: CooldownKey, startedAt start: BootClock.Instant?) -> Bool {
        guard unsavedCancels[key] != nil, let time = cancelTimes[key] else { return false }
        guard let start else { return true }
        return start <= time
    }

    /// Forgets the cancels `saved` names that were not made again since.
    mutating func forgetCancels(_ saved: [CooldownKey: UInt64]) {
        for (key, number) in saved where unsavedCancels[key] == number {
            unsavedCancels[key] = nil
            cancelTimes[key] = nil
        }
    }

    /// Notes the server-time end known for the cooldown of `key` that ends
    /// at `end` (nil: none is), if that cooldown still runs.
    mutating func noteServerEnd(_ serverEnd: Duration?, of key: CooldownKey, endingAt end: BootClock.Instant) {
        guard cooldowns[key]?.end == end else { return }
        serverEnds[key] = serverEnd.map { (end, $0) }
    }

    /// Forgets the server-time end known for `key`'s cooldown: it was
    /// cancelled, or a new one started.
    mutating func forgetServerEnd(of key: CooldownKey) {
        serverEnds[key] = nil
    }

    /// The server-time end known for `cooldown`, if it is the cooldown it
    /// was noted for.
    func serverEnd(of cooldown: Cooldowns.Cooldown) -> Duration? {
        guard let noted = serverEnds[CooldownKey(cooldown.key)], noted.end == cooldown.end else { return nil }
        return noted.serverEnd
    }

    /// Drops the cooldowns whose countdowns `center` no longer holds, and
    /// returns the others.
    mutating func dropEnded(_ center: CountdownCenter) -> [Cooldowns.Cooldown] {
        cooldowns = cooldowns.filter { center.contains($0.value.countdown) }
        if !serverEnds.isEmpty { serverEnds = serverEnds.filter { cooldowns[$0.key] != nil } }
        return Array(cooldowns.values)
    }
}
