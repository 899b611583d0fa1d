import TimerKit

/// Why a ``CountdownCenter`` or ``Cooldowns`` call was refused. A refused
/// call changes nothing.
public enum CountdownError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A server-time instant given to a center on the boot clock, which has
    /// no trusted clock to place it with.
    case needsTrustedClock
    /// The handle names no countdown of this center (ended, removed, or
    /// another center's).
    case noSuchCountdown(Countdown)
    /// The group was not made by this center.
    case noSuchGroup(CountdownGroup)
    /// A granularity must be at least one nanosecond.
    case invalidGranularity(Duration)
    /// A cooldown must last at least one nanosecond.
    case invalidDuration(Duration)
    /// The center's loop refused its timer.
    case timer(TimerError)
    /// A cooldown's key must be 1 to 256 bytes of UTF-8.
    case invalidKey(String)
    /// ``Cooldowns`` was made without a file to save to or restore from.
    case noStateFile
    /// More cooldowns run than the state file holds (1,024): the file is
    /// left as it was, and every cooldown still runs in memory.
    case tooManyCooldowns(Int)

    // MARK: Saved cooldowns

    /// There is no saved state at this path.
    case stateFileNotFound(String)
    /// The file ends before the state it announces.
    case stateFileTruncated
    /// The file has the format but cannot be used: a bad checksum,
    /// inconsistent lengths or impossible values. The text says which.
    case stateFileCorrupt(String)
    /// The file is not a TimerKit cooldown state at all.
    case notAStateFile
    /// The file was written by a newer version of the format than this
    /// library reads.
    case stateFileFromNewerVersion(UInt16)
    /// Reading or writing the file failed (the call and its errno).
    case system(SystemError)

    /// A key as the text of an error: its length, and its first 40 Unicode
    /// scalars escaped and quoted (a key may be any length, and hold
    /// newlines or control characters).
    private static func describe(_ key: String) -> String {
        key.isEmpty ? "an empty string" : "\(key.utf8.count) bytes: " + ErrorText.quoted(key)
    }

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .needsTrustedClock: "a server-time instant needs a center on a trusted clock"
        case .noSuchCountdown(let countdown): "\(countdown) is not in this center"
        case .noSuchGroup(let group): "\(group) was not made by this center"
        case .invalidGranularity(let granularity):
            "a granularity must be at least 1 ns, not \(granularity)"
        case .invalidDuration(let duration): "a cooldown must last at least 1 ns, not \(duration)"
        case .timer(let error): error.description
        case .invalidKey(let key): "a cooldown's key must be 1 to 256 bytes of UTF-8, not \(Self.describe(key))"
        case .tooManyCooldowns(let count):
            "the state file holds at most \(CooldownStateFile.maximumEntries) cooldowns, not \(count)"
        case .noStateFile: "these cooldowns have no file to save to or restore from"
        case .stateFileNotFound(let path): "no saved cooldowns at \(ErrorText.quoted(path, limit: 1024))"
        case .stateFileTruncated: "the saved cooldowns are truncated"
        case .stateFileCorrupt(let why): "the saved cooldowns are corrupt: \(why)"
        case .notAStateFile: "not a TimerKit cooldown state file"
        case .stateFileFromNewerVersion(let version):
            "the saved cooldowns have format version \(version), newer than this library reads"
        case .system(let error): error.description
        }
    }
}
