/// The running cooldowns of a ``Cooldowns``, and its cancels that the file
/// may not know of yet: one lock for both, so that a cancel, a restore
/// resuming the same key, and a save taking what to write see each other
/// whole.
struct RunningCooldowns {
    var cooldowns: [CooldownKey: Cooldowns.Cooldown] = [:]
    /// Keys cancelled since the last save that succeeded, each with the
    /// number of its last cancel. What the file holds for such a key is
    /// older than the cancel (the file is one `Cooldowns`'s), so a read of
    /// the file skips it. A save forgets the cancels it took with the
    /// cooldowns it wrote, unless the key was cancelled again meanwhile.
    private(set) var unsavedCancels: [CooldownKey: UInt64] = [:]
    private var cancelsMade: UInt64 = 0

    func isCancelUnsaved(_ key: CooldownKey) -> Bool {
        unsavedCancels[key] != nil
    }

    mutating func noteCancel(of key: CooldownKey) {
        cancelsMade += 1
        unsavedCancels[key] = cancelsMade
    }

    /// Forgets the cancels `saved` names that were not made again since.
    mutating func forgetCancels(_ saved: [CooldownKey: UInt64]) {
        for (key, number) in saved where unsavedCancels[key] == number {
            unsavedCancels[key] = nil
        }
    }

    /// Drops the cooldowns whose countdowns `center` no longer holds, and
    /// returns the others.
    mutating func dropEnded(_ center: CountdownCenter) -> [Cooldowns.Cooldown] {
        cooldowns = cooldowns.filter { center.contains($0.value.countdown) }
        return Array(cooldowns.values)
    }
}
