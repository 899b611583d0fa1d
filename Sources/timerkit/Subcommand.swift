#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A `timerkit` subcommand: its name and usage, and the replies every one
/// gives to a bad command line or a failure.
protocol Subcommand {
    /// The word after `timerkit`.
    static var name: String { get }
    /// What `--help` prints.
    static var usage: String { get }
}

extension Subcommand {
    /// Prints `timerkit NAME: message` and the usage to standard error, and
    /// returns 64, the status of a bad command line.
    static func usageError(_ message: String) -> Int32 {
        printError("timerkit \(name): \(message)\n\(usage)")
        return 64
    }

    /// Runs `body`, printing what it throws as `timerkit NAME: error` (the
    /// error made printable) and returning 1 then.
    static func reportingErrors(_ body: () throws -> Int32) -> Int32 {
        do {
            return try body()
        } catch {
            printError("timerkit \(name): \(printable: error)")
            return 1
        }
    }
}

/// `text` as a number written in decimal, as the usages show them: digits,
/// with at most one "." among them. `Double(_:)` alone also takes C's forms
/// ("0x10", "1e3", "inf", "nan"), which no usage offers.
func decimalNumber(_ text: String) -> Double? {
    var digits = 0
    var points = 0
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digits += 1
        case UInt8(ascii: "."): points += 1
        default: return nil
        }
    }
    guard digits > 0 && points <= 1 else { return nil }
    return Double(text)
}

/// Whether something (a file, a link, anything) is at `path`: a state file
/// that could not be restored is "left as it is" only then (a path through a
/// regular file, failing with ENOTDIR, names nothing).
func somethingIsAt(_ path: String) -> Bool {
    var status = stat()
    return lstat(path, &status) == 0
}

/// What went wrong restoring the state file at `path`, for a person: for
/// something there that is not a regular file, what it is,
/// rather than the EINVAL that the library refuses it with; else `error`'s
/// description. As is: a screen or a terminal needs it made printable.
func restoreFailureText(_ path: String, _ error: any Error) -> String {
    // stat, not lstat: the restore follows a link, as this does.
    var status = stat()
    guard stat(path, &status) == 0 else { return "\(error)" }
    let kind: String? =
        switch status.st_mode & S_IFMT {
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFDIR: "a directory"
        default: nil
        }
    guard let kind else { return "\(error)" }
    return "not a regular file: it is \(kind)"
}
