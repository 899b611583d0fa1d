import CTimerCore
import Foundation
import TimerKit

/// `timerkit clocks`: every clock's reading and resolution, through the Swift
/// facade (CoreClock) and the C core (tk_clock_now, tk_clock_resolution), the
/// boot id, this thread's timer slack and the time spent suspended.
enum ClocksCommand {
    static func run() -> Int32 {
        var failures: [String] = []
        var lines: [String] = []

        func core(_ clock: tk_clock, _ name: String) -> (now: Int64, resolution: Int64)? {
            var now: Int64 = 0
            var resolution: Int64 = 0
            let a = tk_clock_now(clock, &now)
            let b = tk_clock_resolution(clock, &resolution)
            if a != 0 { failures.append("tk_clock_now(\(name)) returned \(a)") }
            if b != 0 { failures.append("tk_clock_resolution(\(name)) returned \(b)") }
            return a == 0 && b == 0 ? (now, resolution) : nil
        }

        let header = pad("clock", 10) + pad("CoreClock.now()", 24, right: true)
            + pad("tk_clock_now()", 24, right: true) + pad("resolution (Swift / C)", 26, right: true)
        lines.append(header)
        let clocks: [(CoreClock, tk_clock, String)] = [
            (.monotonic, TK_CLOCK_MONOTONIC, "monotonic"),
            (.boot, TK_CLOCK_BOOTTIME, "boot"),
            (.wall, TK_CLOCK_REALTIME, "wall"),
        ]
        var wallNow: Int64?
        for (clock, raw, name) in clocks {
            var swiftNow = "-"
            var swiftResolution = "-"
            do throws(CoreError) {
                swiftNow = seconds(try clock.now().nanoseconds) + " s"
                swiftResolution = "\(try clock.resolution().nanoseconds) ns"
            } catch {
                failures.append("CoreClock.\(name): \(error)")
            }
            let c = core(raw, name)
            if raw == TK_CLOCK_REALTIME { wallNow = c?.now }
            lines.append(
                pad(name, 10) + pad(swiftNow, 24, right: true)
                    + pad(c.map { seconds($0.now) + " s" } ?? "-", 24, right: true)
                    + pad(swiftResolution + " / " + (c.map { "\($0.resolution) ns" } ?? "-"), 26, right: true))
        }
        if let wallNow {
            let date = Date(timeIntervalSince1970: Double(wallNow) / 1e9)
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            lines.append(pad("", 10) + "  wall = \(formatter.string(from: date))")
        }
        lines.append("")

        var bootID = [CChar](repeating: 0, count: 64)
        let idResult = tk_boot_id(&bootID, bootID.count)
        if idResult == 0 {
            let id = String(decoding: bootID.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            lines.append("boot id (tk_boot_id):              \(id)")
        } else {
            failures.append("tk_boot_id returned \(idResult)")
        }

        var slack: Int64 = 0
        let slackResult = tk_timer_slack(&slack)
        if slackResult == 0 {
            lines.append("timer slack (tk_timer_slack):      \(slack) ns (\(micros(slack)) us), this thread")
        } else {
            failures.append("tk_timer_slack returned \(slackResult)")
        }

        // BOOTTIME - MONOTONIC, with the boot reading bracketed by two
        // monotonic ones; the bracket bounds the error.
        var before: Int64 = 0
        var boot: Int64 = 0
        var after: Int64 = 0
        let r1 = tk_clock_now(TK_CLOCK_MONOTONIC, &before)
        let r2 = tk_clock_now(TK_CLOCK_BOOTTIME, &boot)
        let r3 = tk_clock_now(TK_CLOCK_MONOTONIC, &after)
        if r1 == 0 && r2 == 0 && r3 == 0 {
            let suspended = boot - (before + (after - before) / 2)
            lines.append(
                "suspended (BOOTTIME - MONOTONIC):  \(seconds(suspended)) s (+/- \((after - before + 1) / 2) ns)")
        } else {
            failures.append("tk_clock_now for the suspend time returned \(r1), \(r2), \(r3)")
        }
        do throws(CoreError) {
            let first = try CoreClock.monotonic.now()
            let boot = try CoreClock.boot.now()
            let last = try CoreClock.monotonic.now()
            let suspended = boot.nanoseconds - (first.nanoseconds + (last - first).nanoseconds / 2)
            lines.append(
                "  same via CoreClock:               \(seconds(suspended)) s (+/- \(((last - first).nanoseconds + 1) / 2) ns)")
        } catch {
            failures.append("CoreClock: \(error)")
        }

        print(lines.joined(separator: "\n"))
        for failure in failures {
            FileHandle.standardError.write(Data("timerkit clocks: \(failure)\n".utf8))
        }
        return failures.isEmpty ? 0 : 1
    }
}
