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
