// timer-peers: the side-by-side benchmark (TimerBench's BenchCommand) with
// SwiftNIO added as a peer and the allocations of every side counted.
//
//   swift run -c release timer-peers [--quick | --full] [--json] [--seed N] [--charts DIR]
//
// The README's side-by-side table is `--full`. `--charts DIR` also writes
// three SVG charts of the run into DIR (lateness-cdf.svg, cost-vs-pending.svg,
// wakeups-vs-tolerance.svg). Allocations are counted with
// ordo-one's malloc interposer: counting is switched on only while a side
// fills its pending timers and during one warm batch of schedule+invalidate
// pairs, never while a side is timed; the interposer stays in the path of
// every allocation (a forwarding call and a 16-byte header each).
import Foundation
import InterposedMallocs
import NIOPeers
import TimerBench

let usage = """
    usage: timer-peers [--quick | --full] [--json] [--seed N] [--charts DIR]
      --quick        a few seconds (fewer sizes, rounds and timers)
      --full         about 2.5 minutes: 1M pending timers, more rounds
      --json         the figures as JSON instead of the table
      --seed N       the seed of the random delays (default: TK_SEED, else random)
      --charts DIR   also write lateness-cdf.svg, cost-vs-pending.svg and
                     wakeups-vs-tolerance.svg into DIR (made if missing)

    """
let arguments = CommandLine.arguments.dropFirst()
if arguments.contains("--help") || arguments.contains("-h") {
    print(usage, terminator: "")
    exit(0)
}
let (parsed, problem) = BenchCommand.Options.parse(arguments)
guard let options = parsed else {
    FileHandle.standardError.write(Data("timer-peers: \(problem ?? "bad option")\n\(usage)".utf8))
    exit(64)
}

let mallocs = MallocCounter.interposed()
var peers = NIOPeers.adding(to: .standard(options.length))
peers.mallocs = mallocs
let status = BenchCommand.run(options, peers: peers)
try? NIOPeers.group.syncShutdownGracefully()
exit(status)
