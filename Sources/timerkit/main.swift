// timerkit: a command-line tool for TimerKit.
//
//   timerkit clocks                          the clocks, boot id, timer slack, time suspended
//   timerkit bench [--quick | --full] [--json] [--seed N]
//                                            TimerKit against Foundation, Dispatch and the
//                                            standard library, measured in one run
//   timerkit trusted-time --server ADDRESS [--port N] ...
//                                            sync a trusted clock from an SNTP server
import Foundation
import TimerBench

let usage = """
    usage: timerkit clocks
           timerkit bench [--quick | --full] [--json] [--seed N]
           timerkit trusted-time --server ADDRESS [--port N] [--samples N] [--timeout-ms N]
                                 [--state FILE] [--no-sync] [--json]

      clocks   every clock's reading and resolution (CoreClock and the C core), the boot id,
               this thread's timer slack, and BOOTTIME - MONOTONIC (time spent suspended)
      bench    TimerKit against Foundation Timer, DispatchSourceTimer and Task.sleep in one
               run (about a minute and a half): schedule+invalidate and churn cost, memory per
               timer, wake-up lateness, tolerance and coalescing, clock reads; progress on stderr
                 --quick   a short run (a few seconds), as CI runs it
                 --full    a longer run (about 2.5 minutes; 1M pending timers)
                 --json    the figures as JSON on stdout
                 --seed N  the seed of the random delays (else $TK_SEED, else the time)
      trusted-time
               sync a TrustedClock from an SNTP server (an IPv4 or IPv6 literal), and print
               trusted time, its error bound, the wall clock's offset and any tamper event;
               --state FILE restores/saves the sync state, --no-sync only restores

    """

func runCommand(_ arguments: [String]) -> Int32 {
    guard let command = arguments.first else {
        FileHandle.standardError.write(Data(usage.utf8))
        return 64
    }
    switch command {
    case "clocks":
        guard arguments.count == 1 else { break }
        return ClocksCommand.run()
    case "bench":
        let (options, problem) = BenchCommand.Options.parse(arguments.dropFirst())
        guard let options else {
            FileHandle.standardError.write(Data("timerkit: \(problem ?? "bad option")\n\(usage)".utf8))
            return 64
        }
        return BenchCommand.run(options)
    case "trusted-time":
        return TrustedTimeCommand.run(arguments.dropFirst())
    case "-h", "--help", "help":
        print(usage, terminator: "")
        return 0
    default:
        break
    }
    FileHandle.standardError.write(Data(usage.utf8))
    return 64
}

exit(runCommand(Array(CommandLine.arguments.dropFirst())))
