/// How the texts of TimerKit's errors, and of the modules built on it, show
/// a string that came from the caller or from a server: a mode's name, a
/// cooldown's key, a path, a host name, a date header.
package enum ErrorText {
    /// `text` quoted and escaped as a Swift string literal, so that a
    /// newline or a control character in it cannot break the line, and cut
    /// after its first `limit` Unicode scalars, with "…" after the closing
    /// quote (counted in scalars: one character may hold any number), so
    /// that a long string cannot make a long text.
    package static func quoted(_ text: String, limit: Int = 40) -> String {
        let scalars = text.unicodeScalars
        let shown = String(reflecting: String(String.UnicodeScalarView(scalars.prefix(limit))))
        return scalars.dropFirst(limit).isEmpty ? shown : shown + "…"
    }
}
