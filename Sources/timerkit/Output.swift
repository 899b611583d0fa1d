import Foundation
import Synchronization
import TimerKit

// What the command prints: aligned columns, durations as seconds, and JSON
// for scripts (the trusted-time test reads one JSON object a line); and the
// one way out for all of it.

/// Standard output and standard error, written with `write(2)` and nothing
/// else: everything the command prints to standard output goes through
/// ``write(_:)`` (``line(_:)`` for a line, as `print` writes one), but for
/// the terminal's set-up and restoring escapes, which `TerminalSettings`
/// writes straight to the descriptor (also from a signal handler). A
/// failure never crashes: the first one on standard output is kept, nothing
/// more is written there, and ``finish(_:)`` reports it once at the end
/// (`timerkit: cannot write the output: <strerror>`, status 1). A failure
/// on standard error is ignored, as there is nowhere left to tell it.
///
/// A broken pipe is such a failure when the process ignores `SIGPIPE`;
/// otherwise the signal ends the process first, as with any program.
enum Output {
    /// The `errno` of the first failed write to standard output, 0 while
    /// none failed.
    private static let firstFailure = Atomic<Int32>(0)

    /// Whether a write to standard output failed: a command that writes as
    /// it goes (a live line, a screen) stops then.
    static var failed: Bool { firstFailure.load(ordering: .acquiring) != 0 }

    /// Writes all of `text` to standard output, unless a write failed
    /// before. Returns whether it was written.
    @discardableResult
    static func write(_ text: String) -> Bool {
        guard !failed else { return false }
        let error = writeAll(1, text)
        guard error == 0 else {
            _ = firstFailure.compareExchange(expected: 0, desired: error, ordering: .acquiringAndReleasing)
            return false
        }
        return true
    }

    /// Writes `text` and a newline to standard output, as `print` does.
    @discardableResult
    static func line(_ text: String) -> Bool {
        write(text + "\n")
    }

    /// The command's exit status: `status`, or 1 if a write to standard
    /// output failed (and `status` was 0), after saying so once on
    /// standard error.
    static func finish(_ status: Int32) -> Int32 {
        let error = firstFailure.load(ordering: .acquiring)
        guard error != 0 else { return status }
        printError("timerkit: cannot write the output: \(String(cString: strerror(error)))")
        return status == 0 ? 1 : status
    }

    /// Makes sure standard input, output and error are open, before the
    /// command opens anything. One that was closed (`>&-`) gets
    /// `/dev/null` opened the wrong way round (write-only for input,
    /// read-only for the others): reading or writing it then fails with
    /// `EBADF`, as on a closed descriptor, and no descriptor the command
    /// opens later (a loop's epoll, timer or event descriptor) can take its
    /// number and receive what was meant for the terminal.
    static func reserveStandardDescriptors() {
        for descriptor: Int32 in 0...2 where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            let opened = open("/dev/null", descriptor == 0 ? O_WRONLY : O_RDONLY)
            // open returns the lowest free number: this one, as the lower
            // ones are open already.
            if opened >= 0 && opened != descriptor {
                _ = dup2(opened, descriptor)
                _ = close(opened)
            }
        }
    }
}

/// Writes all of `text` to `descriptor`, again after `EINTR` and a partial
/// write, and after waiting for room when the descriptor is non-blocking (a
/// terminal whose input the demo made non-blocking shares the flag).
/// Returns 0, or the `errno` of the write that failed.
private func writeAll(_ descriptor: Int32, _ text: String) -> Int32 {
    var text = text
    return text.withUTF8 { bytes -> Int32 in
        var done = 0
        while done < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + done, bytes.count - done)
            if written > 0 {
                done += written
                continue
            }
            guard written < 0 else { return EIO }  // no progress on a non-empty write
            let error = errno
            switch error {
            case EINTR:
                continue
            case EAGAIN:
                var room = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                _ = poll(&room, 1, -1)  // then the write says what is wrong, if anything
            default:
                return error
            }
        }
        return 0
    }
}

/// Writes a line to standard error. It never fails: if standard error
/// cannot be written (closed, full), the line is lost.
func printError(_ message: String) {
    _ = writeAll(2, message + "\n")
}

/// `text` as it may be shown: outside text (a path, an argument, an
/// error's description, any of which may hold what a file name can) with
/// every character that would act on a terminal rather than show written
/// as an escape, so that it can neither move the cursor, nor start an
/// escape sequence, nor break a line or a screen in two. Those are the C0
/// and C1 control characters and DEL (`\t`, `\n`, `\r` and `\e` for tab,
/// newline, carriage return and escape, `\u{9B}` for the others), the line
/// and paragraph separators, and the bidirectional controls, which reorder
/// what follows (`\u{202E}`); a backslash is doubled, so that what shows
/// tells `\n` from a newline. Everything else is kept as it is.
///
/// Every message that embeds outside text, on the screen or on standard
/// error, takes it through here, by `"\(printable: value)"`.
func printable(_ text: String) -> String {
    var out = String.UnicodeScalarView()
    for scalar in text.unicodeScalars {
        switch scalar.value {
        case 0x5C: out += #"\\"#.unicodeScalars
        case 0x09: out += #"\t"#.unicodeScalars
        case 0x0A: out += #"\n"#.unicodeScalars
        case 0x0D: out += #"\r"#.unicodeScalars
        case 0x1B: out += #"\e"#.unicodeScalars
        default:
            if ErrorText.actsOnText(scalar) {
                out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars
            } else {
                out.append(scalar)
            }
        }
    }
    return String(out)
}

extension DefaultStringInterpolation {
    /// Appends `value`'s description made printable (see ``printable(_:)``):
    /// the way a message embeds a path, an argument or an error.
    mutating func appendInterpolation<Value>(printable value: Value) {
        appendLiteral(printable(String(describing: value)))
    }
}

/// `text` padded with spaces to `width` columns on screen (on the left when
/// `right` is set), counted as ``Terminal/columns(of:)`` counts them.
func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let count = text.unicodeScalars.reduce(0) { $0 + Terminal.columns(of: $1) }
    guard count < width else { return text }
    let spaces = String(repeating: " ", count: width - count)
    return right ? spaces + text : text + spaces
}

/// Nanoseconds as `seconds.nanoseconds`, for example `12.000000042`.
func seconds(_ nanoseconds: Int64) -> String {
    let sign = nanoseconds < 0 ? "-" : ""
    let magnitude = nanoseconds.magnitude
    let fraction = String(magnitude % 1_000_000_000)
    return "\(sign)\(magnitude / 1_000_000_000).\(String(repeating: "0", count: 9 - fraction.count))\(fraction)"
}

/// Nanoseconds as microseconds with one decimal.
func micros(_ nanoseconds: Int64) -> String {
    String(format: "%.1f", Double(nanoseconds) / 1000)
}

/// A JSON value with its object keys in the order given.
indirect enum JSON: Sendable {
    case int(Int64)
    /// A whole number that may exceed `Int64.max`, such as a seed.
    case uint(UInt64)
    /// A number written with `digits` decimals.
    case number(Double, digits: Int)
    case string(String)
    case bool(Bool)
    case null
    case array([JSON])
    case object([(String, JSON)])

    /// The value on one line: `{"key": value, ...}`.
    func renderLine() -> String {
        switch self {
        case .int(let value): String(value)
        case .uint(let value): String(value)
        case .number(let value, let digits): value.isFinite ? String(format: "%.\(digits)f", value) : "null"
        case .string(let value): JSON.quote(value)
        case .bool(let value): value ? "true" : "false"
        case .null: "null"
        case .array(let values): "[" + values.map { $0.renderLine() }.joined(separator: ", ") + "]"
        case .object(let members):
            "{" + members.map { JSON.quote($0.0) + ": " + $0.1.renderLine() }.joined(separator: ", ")
                + "}"
        }
    }

    private static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default:
                // JSON needs only C0 controls escaped, but the others that
                // printable(_:) escapes act on a terminal (C1 controls as
                // ESC does), end a line or reorder the text after them.
                if ErrorText.actsOnText(scalar) {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
