// timer-peers: `timerkit bench` with SwiftNIO added as a peer and the
// allocations of every side counted.
//
//   swift run -c release timer-peers [--quick | --full] [--json] [--seed N]
//
// The README's side-by-side table is `--full`. Allocations are counted with
// ordo-one's malloc interposer: counting is switched on only while a side
// fills its pending timers and during one warm batch of schedule+invalidate
// pairs, never while a side is timed; the interposer stays in the path of
// every allocation (a forwarding call and a 16-byte header each).
import Foundation
import InterposedMallocs
import NIOPeers
import TimerBench

let (parsed, problem) = BenchCommand.Options.parse(CommandLine.arguments.dropFirst())
guard let options = parsed else {
    FileHandle.standardError.write(Data("""
        timer-peers: \(problem ?? "bad option")
        usage: timer-peers [--quick | --full] [--json] [--seed N]

        """.utf8))
    exit(64)
}

let mallocs = MallocCounter.interposed()
var peers = NIOPeers.adding(to: .standard(options.length))
peers.mallocs = mallocs
let status = BenchCommand.run(options, peers: peers)
try? NIOPeers.group.syncShutdownGracefully()
exit(status)
