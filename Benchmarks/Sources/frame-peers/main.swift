// frame-peers: frame pacing side by side in one run: TimerKit's
// FrameTicker, a Task.sleep(until:) loop, a DispatchSourceTimer and NIO's
// scheduleRepeatedTask, at 60, 120 and 240 Hz, with a bare timerfd in C as
// the floor.
//
//   swift run -c release frame-peers [--quick] [--json]
//
// The default is the README's run: 10 s per peer and rate (2.5 minutes).
// --quick is a smoke run (1 s each). Before the pacing runs, the allocations
// per frame of a FrameTicker feeding a FrameRateMonitor are counted with
// ordo-one's malloc interposer, on a manual loop.
import FrameBench
import Foundation
import InterposedMallocs
import NIOPeers
import TimerBench

var config = FrameBench.Config.standard
var json = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick":
        config = .quick
    case "--json":
        json = true
    default:
        FileHandle.standardError.write(Data("""
            frame-peers: unknown option \(argument)
            usage: frame-peers [--quick] [--json]

            """.utf8))
        exit(64)
    }
}
let counter = MallocCounter.interposed()
let machine = Machine.describe()
let load = Machine.loadAverage()
let peers: [any FramePeer] = [BareTimerfdPeer(), FrameTickerPeer(), TaskSleepPeer(), DispatchPeer(), NIOFramePeer()]
progress("frame-peers: allocations per frame (a manual loop, 100,000 frames)")
let allocations: FrameAllocations
do {
    allocations = try FrameAllocations.measure(counter)
} catch {
    FileHandle.standardError.write(Data("frame-peers: \(error)\n".utf8))
    exit(1)
}
var report = FrameBench.run(config, peers: peers)
report.allocations = allocations
print(json ? report.json.render() : report.text(machine: machine, load: load))
exit(report.failures.isEmpty ? 0 : 1)
