import Foundation
import TimerKit

/// The terminal of an interactive command: raw keys in, whole screens out,
/// with ANSI escapes only (no curses). Restores what it changed on `close`.
final class Terminal {
    private var saved = termios()
    private var savedFlags: Int32 = 0
    private var raw = false

    /// Puts standard input in raw mode (keys come one at a time, unechoed,
    /// Ctrl-C included), non-blocking, and hides the cursor.
    ///
    /// - Throws: the failed call (`tcgetattr` when standard input is not a
    ///   terminal).
    func open() throws(SystemError) {
        _ = try SystemError.posix(tcgetattr(0, &saved), "tcgetattr")
        var settings = saved
        settings.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG)
        settings.c_iflag &= ~tcflag_t(IXON | ICRNL)
        _ = try SystemError.posix(tcsetattr(0, TCSANOW, &settings), "tcsetattr")
        raw = true
        do throws(SystemError) {
            savedFlags = try SystemError.posix(fcntl(0, F_GETFL), "fcntl")
            _ = try SystemError.posix(fcntl(0, F_SETFL, savedFlags | O_NONBLOCK), "fcntl")
        } catch {
            close()
            throw error
        }
        write("\u{1B}[?25l\u{1B}[2J")
    }

    /// Restores the terminal and shows the cursor again.
    func close() {
        guard raw else { return }
        raw = false
        _ = fcntl(0, F_SETFL, savedFlags)  // best effort on the way out
        _ = tcsetattr(0, TCSANOW, &saved)
        write("\u{1B}[?25h\n")
    }

    /// The keys typed since the last call (none if nothing was typed).
    func keys() -> [UInt8] {
        var keys: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let got = Foundation.read(0, &buffer, buffer.count)
            if got <= 0 { break }  // EAGAIN: nothing more for now; 0: end of input
            keys += buffer[0..<got]
        }
        return keys
    }

    /// Draws `lines` as the whole screen, from the top left corner.
    func draw(_ lines: [String]) {
        write("\u{1B}[H" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\r\n") + "\u{1B}[J")
    }

    private func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}
