// timerkit: a command-line tool for TimerKit.
//
//   timerkit clocks                          the clocks, boot id, timer slack, time suspended
//   timerkit trusted-time --server HOST [--port N] ...
//                                            sync a trusted clock from an SNTP server
//   timerkit demo [--state FILE] ...         countdowns, a carousel and a cooldown on a terminal
//   timerkit fps [--rate HZ] [--seconds S] ...  a frame ticker with simulated work, watched live
//
// The side-by-side benchmarks are in Benchmarks/ (`timer-peers`).
import Foundation

let usage = """
    usage: timerkit clocks
           timerkit demo [--state FILE] [--sale-seconds N] [--code-seconds N] [--print-after S]
           timerkit fps [--rate HZ] [--seconds S] [--work-ms X] [--jank P] [--spike-ms Y]
                        [--seed N] [--json]
           timerkit trusted-time --server HOST [--port N] [--samples N] [--timeout-ms N]
                                 [--state FILE] [--json]
           timerkit trusted-time --no-sync [--state FILE] [--json]
           timerkit trusted-time --clocks
           timerkit COMMAND --help           the command's own usage (or: timerkit help COMMAND)

      clocks   every clock's reading and resolution (TimerKit's clocks and the C core), the
               boot id, this thread's timer slack, and BOOTTIME - MONOTONIC (time suspended)
      demo     a terminal screen: a flash sale, a carousel that turns during a drag beside a
               badge that waits, a verification-code cooldown that survives a restart
               (keys: q quits, d drags, s sends a code)
      fps      a frame ticker at HZ with X ms of work a frame and spikes on P % of frames: fps,
               p99 frame time, dropped frames and hitch time on one line (--json: a summary)
      trusted-time
               sync a TrustedClock from an SNTP server (a host name or an IP address), and print
               trusted time, its error bound, the wall clock's offset and any tamper event;
               --state FILE restores/saves the sync state, --no-sync only restores

    """

/// Refuses the command line: `message`, then the usage, on standard error,
/// and status 64 (EX_USAGE).
func refuse(_ message: String) -> Int32 {
    printError("timerkit: \(message)\n\(usage)")
    return 64
}

func runCommand(_ arguments: [String]) -> Int32 {
    guard let command = arguments.first else { return refuse("no command given") }
    switch command {
    case "clocks":
        return ClocksCommand.run(arguments.dropFirst())
    case "trusted-time":
        return TrustedTimeCommand.run(arguments.dropFirst())
    case "demo":
        return DemoCommand.run(arguments.dropFirst())
    case "fps":
        return FpsCommand.run(arguments.dropFirst())
    case "-h", "--help", "help":
        // `timerkit help demo` is `timerkit demo --help`, as with git.
        let rest = arguments.dropFirst()
        guard rest.count <= 1 else { return refuse("\(printable: command) takes at most one command") }
        // `timerkit help help` is this usage too.
        guard let named = rest.first, !["-h", "--help", "help"].contains(named) else {
            Output.write(usage)
            return 0
        }
        guard ["clocks", "trusted-time", "demo", "fps"].contains(named) else {
            return refuse("unknown command \(printable: named)")
        }
        return runCommand([named, "--help"])
    default:
        return refuse("unknown command \(printable: command)")
    }
}

/// The command line as text, or nil once an argument that is not UTF-8 text
/// was refused. `CommandLine.arguments` repairs such bytes (with U+FFFD),
/// so a path given that way would name another file: it is refused instead.
func textArguments() -> [String]? {
    var arguments: [String] = []
    for index in 1..<Int(CommandLine.argc) {
        guard let bytes = CommandLine.unsafeArgv[index] else { break }
        guard let argument = String(validatingCString: bytes) else {
            _ = refuse("argument \(index) is not UTF-8 text: \(escapingBytes(bytes))")
            return nil
        }
        arguments.append(argument)
    }
    return arguments
}

/// `bytes` shown as text (made printable) with each byte that is not part
/// of a UTF-8 character as `\xHH`.
func escapingBytes(_ bytes: UnsafePointer<CChar>) -> String {
    let buffer = UnsafeRawBufferPointer(start: bytes, count: strlen(bytes))
    var shown = ""
    var start = 0
    while start < buffer.count {
        // A UTF-8 character takes one to four bytes.
        let character = (1...4).lazy.filter { start + $0 <= buffer.count }.compactMap { length in
            String(validating: buffer[start..<start + length], as: UTF8.self).map { ($0, length) }
        }.first
        if let (text, length) = character {
            shown += printable(text)
            start += length
        } else {
            let hex = String(buffer[start], radix: 16, uppercase: true)
            shown += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            start += 1
        }
    }
    return shown
}

Output.reserveStandardDescriptors()
guard let arguments = textArguments() else { exit(Output.finish(64)) }
let status = Output.finish(runCommand(arguments))
// A command that Ctrl-C finished early (`timerkit fps`) ends as Ctrl-C ends a program.
Interrupt.endIfRequested()
exit(status)
