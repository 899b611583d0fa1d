/// How the texts of TimerKit's errors, and of the modules built on it, show
/// a string that came from the caller or from a server: a mode's name, a
/// cooldown's key, a path, a host name, a date header.
package enum ErrorText {
    /// `text` quoted and escaped as a Swift string literal would be, with
    /// every scalar that acts on the text around it (see ``actsOnText(_:)``)
    /// written as `\u{…}`, so that nothing in it can break the line, reorder
    /// it or reach a terminal as a command; and cut after its first `limit`
    /// Unicode scalars, with "…" after the closing quote (counted in
    /// scalars: one character may hold any number), so that a long string
    /// cannot make a long text.
    package static func quoted(_ text: String, limit: Int = 40) -> String {
        var out = "\""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit { return out + "\"…" }
            count += 1
            switch scalar {
            case "\0": out += "\\0"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "'": out += "\\'"
            default:
                if actsOnText(scalar) {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    out += "\\u{" + (hex.count < 2 ? "0" : "") + hex + "}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// Whether `scalar` acts on the text around it rather than showing: a C0
    /// or C1 control or DEL, the line or paragraph separator, or a
    /// bidirectional control (which reorders what follows).
    package static func actsOnText(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:
            true
        default:
            false
        }
    }
}
