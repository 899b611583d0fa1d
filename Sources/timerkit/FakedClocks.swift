// Whether the monotonic and boot clocks this process reads are the
// kernel's: libfaketime, preloaded without FAKETIME_DONT_FAKE_MONOTONIC=1,
// fakes what `clock_gettime` returns but not the timers a loop arms with
// the kernel, so a loop's timers would fire at the wrong times (an hour
// faked ahead, an hour late), silently. The commands that run a loop
// refuse to start then.

import CTimerCore

/// Whether `clock`, read as the loop reads it, is off the kernel's own
/// reading of it (`tk_clock_now_kernel`, a system call that no preloaded
/// library reaches) by more than 50 ms: read between two of the kernel's,
/// twice, so that a busy machine's pause between reads is not taken for it.
func isFaked(_ clock: tk_clock) -> Bool {
    let slack: Int64 = 50_000_000
    for _ in 0..<2 {
        var before: Int64 = 0
        var read: Int64 = 0
        var after: Int64 = 0
        guard tk_clock_now_kernel(clock, &before) == 0, tk_clock_now(clock, &read) == 0,
            tk_clock_now_kernel(clock, &after) == 0
        else { return false }
        if read >= before &- slack && read <= after &+ slack { return false }
    }
    return true
}

/// Whether `command` must not run a loop here: if so, it has said why on
/// standard error.
func refusesForFakedClocks(_ command: String) -> Bool {
    let faked = [(TK_CLOCK_MONOTONIC, "monotonic"), (TK_CLOCK_BOOTTIME, "boot")].filter { isFaked($0.0) }
    guard !faked.isEmpty else { return false }
    let names = faked.map(\.1).joined(separator: " and ")
    printError(
        "timerkit \(command): the \(names) clock\(faked.count > 1 ? "s" : "") this process reads"
            + " \(faked.count > 1 ? "are" : "is") not the kernel's (libfaketime faking \(faked.count > 1 ? "them" : "it")?),"
            + " so a loop's timers would fire at the wrong times."
            + " Run it with FAKETIME_DONT_FAKE_MONOTONIC=1, which fakes only the wall clock.")
    return true
}
