import Synchronization
import TimerKit
import TrustedTime

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `timerkit trusted-time`: syncs a TrustedClock from an SNTP server and
/// reports trusted time next to the local clocks, with the wall-clock changes
/// the sync detected. scripts/test-trusted-time.sh runs it under faketime
/// against chrony on loopback.
///
///     timerkit trusted-time --server HOST [--port N] [--samples N] [--timeout-ms N]
///                           [--state FILE] [--json]
///     timerkit trusted-time --no-sync [--state FILE] [--json]
///     timerkit trusted-time --clocks
///
/// `--state FILE` restores the clock from FILE first (if it exists) and saves
/// it there after a sync, unless the restore failed: a file that cannot be
/// restored is left as it is (a `save_error` says so); with `--no-sync` the clock only restores, which is
/// a process restart that must go on without the network. `--clocks` prints
/// the boot and wall clocks read back to back, nothing else (the script runs
/// it outside faketime to learn the real time).
enum TrustedTimeCommand: Subcommand {
    static let name = "trusted-time"

    static let usage = """
        usage: timerkit trusted-time --server HOST [--port N] [--samples N] [--timeout-ms N]
                                     [--state FILE] [--json]
               timerkit trusted-time --no-sync [--state FILE] [--json]
               timerkit trusted-time --clocks

          Syncs a trusted clock from the SNTP server HOST (a host name such as
          time.example.org, or an IPv4 or IPv6 address) and prints trusted time, its error
          bound, the local clocks, and the wall-clock changes the sync detected.
            --port N        the server's port (default 123)
            --samples N     requests to send, 1 to 64; the reply with the smallest delay wins
                            (default 4)
            --timeout-ms N  how long to wait for each reply, 1 to 60000 (default 2000)
            --state FILE    restore the clock from FILE first, save it there after the sync;
                            a file that cannot be restored is left as it is (not saved over);
                            a save puts a new file at FILE: a symbolic link there is
                            replaced, and the file it led to is left as it was
            --no-sync       ask no server (with --state: continue from the saved state);
                            --server, --port, --samples and --timeout-ms are refused
            --json          the report as JSON on stdout
            --clocks        only read the boot and wall clocks back to back, as JSON; it
                            takes no other option

        """

    struct Options {
        var server: String?
        var port: UInt16 = 123
        var samples = 4
        var timeout = Duration.milliseconds(2000)
        var statePath: String?
        var sync = true
        var json = false
        var clocksOnly = false
    }

    static func run(_ arguments: ArraySlice<String>) -> Int32 {
        var options = Options()
        var rest = arguments
        var given: [String] = []  // the options, in order
        while let argument = rest.popFirst() {
            given.append(argument)
            switch argument {
            case "--server":
                guard let value = rest.popFirst() else { return usageError("--server needs a host") }
                options.server = value
            case "--port":
                guard let value = rest.popFirst(), let port = wholeNumber(value).flatMap(UInt16.init(exactly:)), port != 0 else {
                    return usageError("--port needs a port number")
                }
                options.port = port
            case "--samples":
                guard let value = rest.popFirst(), let samples = wholeNumber(value).flatMap(Int.init(exactly:)),
                    (1...64).contains(samples)
                else { return usageError("--samples needs a number in 1...64") }
                options.samples = samples
            case "--timeout-ms":
                guard let value = rest.popFirst(), let milliseconds = wholeNumber(value).flatMap(Int64.init(exactly:)),
                    (1...60_000).contains(milliseconds)
                else { return usageError("--timeout-ms needs a number of milliseconds, 1 to 60000") }
                options.timeout = .milliseconds(milliseconds)
            case "--state":
                guard let value = rest.popFirst(), !value.isEmpty else { return usageError("--state needs a file") }
                options.statePath = value
            case "--no-sync": options.sync = false
            case "--json": options.json = true
            case "--clocks": options.clocksOnly = true
            case "-h", "--help":
                Output.write(usage)
                return 0
            default:
                return usageError("unknown option \(printable: argument)")
            }
        }
        // The three forms of the usage do not mix.
        if options.clocksOnly {
            if let other = given.first(where: { $0 != "--clocks" }) {
                return usageError("--clocks takes no other option (got \(other))")
            }
            return printClocks()
        }
        if !options.sync, let other = given.first(where: { Self.syncOptions.contains($0) }) {
            return usageError("--no-sync asks no server: \(other) is refused")
        }
        if options.sync && options.server == nil { return usageError("--server is required") }
        return report(options)
    }

    /// The options of a sync, which `--no-sync` refuses.
    private static let syncOptions: Set<String> = ["--server", "--port", "--samples", "--timeout-ms"]

    // MARK: The report

    private static func report(_ options: Options) -> Int32 {
        let readings = SystemClockReadings()
        let clock = TrustedClock(readings: readings)
        let changes = ChangeLog()
        clock.onWallClockChange { changes.append($0) }
        var fields: [(String, JSON)] = []
        var failed = false
        // A file there that could not be restored is not saved over.
        var restoreFailed = false

        if let server = options.server {
            fields.append(("server", .string(server)))
            fields.append(("port", .int(Int64(options.port))))
        }
        if let path = options.statePath {
            do throws(TrustedTimeError) {
                switch try clock.restore(from: path) {
                case .restored(let count):
                    fields.append(("restore", .string("restored \(count) sample\(count == 1 ? "" : "s")")))
                case .fromAnotherBoot: fields.append(("restore", .string("from another boot: not used")))
                }
            } catch {
                if case .stateFileNotFound = error {
                    fields.append(("restore", .string("no saved state")))
                } else {
                    fields.append(("restore", .string("error: \(stateFileFailureText(path, error))")))
                    failed = true
                    restoreFailed = true
                }
            }
        }

        if options.sync, let server = options.server {
            do throws(TrustedTimeError) {
                let m = try clock.sync(
                    sntpServer: server, port: options.port, samples: options.samples,
                    timeout: options.timeout)
                fields.append(
                    ("sntp",
                     .object([
                        ("offset_ns", .int(m.offset.saturatingNanoseconds)),
                        ("delay_ns", .int(m.delay.saturatingNanoseconds)),
                        ("error_bound_ns", .int(m.errorBound.saturatingNanoseconds)),
                        ("server_time_ns", .int(m.serverTime.saturatingNanoseconds)),
                        ("local_wall_ns", .int(m.localWallTime.saturatingNanoseconds)),
                        ("sent_boot_ns", .int(m.sample.sentAt.offset.saturatingNanoseconds)),
                        ("received_boot_ns", .int(m.sample.receivedAt.offset.saturatingNanoseconds)),
                        ("stratum", .int(Int64(m.stratum))),
                        ("version", .int(Int64(m.version))),
                        ("leap", .int(Int64(m.leapIndicator))),
                        ("root_delay_ns", .int(m.rootDelay.saturatingNanoseconds)),
                        ("root_dispersion_ns", .int(m.rootDispersion.saturatingNanoseconds)),
                        ("precision_ns", .int(m.precision.saturatingNanoseconds)),
                        ("requests_sent", .int(Int64(m.requestsSent))),
                        ("replies_accepted", .int(Int64(m.repliesAccepted))),
                     ])))
            } catch {
                fields.append(("sync_error", .string(error.description)))
                failed = true
            }
        }

        // One reading of everything, bracketed by two boot-clock reads: the
        // trusted reading belongs to some boot instant between them.
        let bootBefore = readings.boot
        let trusted = clock.now
        let wall = readings.wall
        let bootAfter = readings.boot
        let monotonic = readings.monotonic
        clock.checkWallClock()

        fields.append(("synced", .bool(trusted.isSynced)))
        fields.append(("boot_ns", .int(bootBefore.offset.saturatingNanoseconds)))
        fields.append(("boot_after_ns", .int(bootAfter.offset.saturatingNanoseconds)))
        fields.append(("monotonic_ns", .int(monotonic.offset.saturatingNanoseconds)))
        fields.append(("wall_ns", .int(wall.saturatingNanoseconds)))
        fields.append(("wall_iso", .string(iso8601(wall))))
        fields.append(("trusted_ns", .int(trusted.sinceEpoch.saturatingNanoseconds)))
        fields.append(("trusted_iso", .string(iso8601(trusted.sinceEpoch))))
        fields.append(("trusted_error_ns", trusted.errorBound.map { .int($0.saturatingNanoseconds) } ?? .null))
        fields.append(("source", .string(describe(trusted.source))))
        fields.append(("wall_minus_trusted_ns", clock.wallClockOffset.map { .int($0.saturatingNanoseconds) } ?? .null))
        fields.append(
            ("wall_clock_changes",
             .array(changes.all.map { change in
                 .object([
                    ("cause", .string(describe(change.cause))),
                    ("change_ns", .int(change.change.saturatingNanoseconds)),
                    ("offset_ns", change.offset.map { .int($0.saturatingNanoseconds) } ?? .null),
                 ])
             })))
        fields.append(("needs_sync", .bool(clock.needsSync)))
        fields.append(("refresh_reason", clock.refreshReason.map { .string(describe($0)) } ?? .null))

        if let path = options.statePath, options.sync, clock.isSynced {
            if restoreFailed {
                fields.append(("save_error", .string(
                    somethingIsAt(path)
                        ? "not saved: the file could not be restored, and is left as it is"
                        : "not saved: the file could not be restored")))
            } else {
                do throws(TrustedTimeError) {
                    try clock.save(to: path)
                    fields.append(("saved", .string(path)))
                } catch {
                    fields.append(("save_error", .string(stateFileFailureText(path, error))))
                    failed = true
                }
            }
        }

        if options.json {
            Output.line(JSON.object(fields).renderLine())
        } else {
            for (name, value) in fields {
                Output.line("\(name): \(value.renderLine())")
            }
        }
        return failed ? 1 : 0
    }

    private static func printClocks() -> Int32 {
        let readings = SystemClockReadings()
        let bootBefore = readings.boot
        let wall = readings.wall
        let bootAfter = readings.boot
        Output.line(
            JSON.object([
                ("boot_ns", .int(bootBefore.offset.saturatingNanoseconds)),
                ("wall_ns", .int(wall.saturatingNanoseconds)),
                ("boot_after_ns", .int(bootAfter.offset.saturatingNanoseconds)),
                ("wall_iso", .string(iso8601(wall))),
            ]).renderLine())
        return 0
    }


    // MARK: Formatting

    private static func describe(_ source: TrustedTime.Source) -> String {
        switch source {
        case .synced: "synced"
        case .wallClockFallback: "wall clock fallback"
        case .exact: "exact"
        }
    }

    private static func describe(_ cause: WallClockChange.Cause) -> String {
        switch cause {
        case .sync: "sync"
        case .check: "check"
        case .clockStep: "clock step"
        }
    }

    private static func describe(_ reason: TrustedClock.RefreshReason) -> String {
        switch reason {
        case .neverSynced: "never synced"
        case .savedStateFromAnotherBoot: "saved state from another boot"
        case .syncTooOld(let age): "sync too old (\(age))"
        case .errorBoundTooLarge(let bound): "error bound too large (\(bound))"
        case .wallClockChanged(let change): "wall clock changed by \(change.change)"
        }
    }

    /// Time since the epoch as an ISO 8601 UTC timestamp (via a TrustedTime).
    private static func iso8601(_ sinceEpoch: Duration) -> String {
        TrustedTime(sinceEpoch: sinceEpoch).description
    }

    /// The wall-clock changes a clock reported, in order.
    private final class ChangeLog: Sendable {
        private let changes = Mutex<[WallClockChange]>([])

        func append(_ change: WallClockChange) {
            changes.withLock { $0.append(change) }
        }

        var all: [WallClockChange] { changes.withLock { $0 } }
    }
}
