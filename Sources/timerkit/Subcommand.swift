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

/// `text` as a whole number written in decimal digits alone, as the usages
/// show them, or nil (also for one past `UInt64.max`). `Int(_:)` and
/// `UInt64(_:)` alone also take a leading "+" (and `Int(_:)` a "-").
func wholeNumber(_ text: String) -> UInt64? {
    guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
        return nil
    }
    return UInt64(text)
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
