// Whether the boot clock this process reads is the kernel's: libfaketime,
// preloaded without FAKETIME_DONT_FAKE_MONOTONIC=1, fakes the monotonic and
// boot clocks that `clock_gettime` returns but not the timers a loop arms
// through the kernel, so a loop would wait for as long as the clocks are
// faked ahead, silently. The commands that run a loop refuse to start then.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How far the boot clock read through `clock_gettime` is from the kernel's
/// own count of the time since boot (`/proc/uptime`, which libfaketime does
/// not touch), in seconds; nil if either cannot be read.
func bootClockSkew() -> Double? {
    var now = timespec()
    guard clock_gettime(CLOCK_BOOTTIME, &now) == 0 else { return nil }
    let fd = open("/proc/uptime", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: 64)
    let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard count > 0 else { return nil }
    // "12345.67 23456.78\n": the first field, the seconds since boot.
    let text = String(decoding: bytes[0..<count], as: UTF8.self)
    guard let field = text.split(separator: " ").first, let uptime = Double(field) else { return nil }
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 - uptime
}

/// Why a loop cannot be run here, for `command`'s error; nil if it can.
/// More than 5 s apart (`/proc/uptime` counts hundredths, and a busy
/// machine may take a while between the two reads) means faked.
func fakedClocksProblem(_ command: String) -> String? {
    guard let skew = bootClockSkew(), abs(skew) > 5 else { return nil }
    let seconds = Int(skew.rounded())
    return "timerkit \(command): the boot and monotonic clocks read \(seconds) s off the kernel's"
        + " (libfaketime faking them?); a loop's timers would wait that much longer."
        + " Run it with FAKETIME_DONT_FAKE_MONOTONIC=1, which fakes only the wall clock."
}
