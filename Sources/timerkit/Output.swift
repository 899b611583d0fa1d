import Foundation

// What the command prints: aligned columns, durations as seconds, and JSON
// for scripts (the trusted-time test reads one JSON object a line).

/// `text` padded with spaces to `width` (on the left when `right` is set).
func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let count = text.count
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

/// Writes a line to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// A JSON value with its object keys in the order given.
indirect enum JSON: Sendable {
    case int(Int64)
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
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
