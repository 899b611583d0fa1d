// executor-peers: an actor whose executor is a TimerLoop, sleeping on
// TimerKit's MonotonicClock (its sleeps' timers on its own loop), against a
// default actor sleeping with Task.sleep, side by side in one run: lateness
// to a 1 ms grid, and how often the actor changed threads.
//
//   swift run -c release executor-peers [--quick]
import ExecutorBench
import Foundation
import TimerBench

var config = ExecutorBench.Config.standard
for argument in CommandLine.arguments.dropFirst() {
    switch argument {
    case "--quick": config = .quick
    default:
        FileHandle.standardError.write(Data("""
            executor-peers: unknown option \(argument)
            usage: executor-peers [--quick]

            """.utf8))
        exit(64)
    }
}
do {
    let sides = try await ExecutorBench.run(config)
    let machine = Machine.describe()
    let description = "\(machine.cpuModel), \(machine.processors) CPUs, Linux \(machine.kernel), "
        + "load \(Machine.loadAverage())"
    print(ExecutorBench.text(sides, config: config, machine: description))
} catch {
    FileHandle.standardError.write(Data("executor-peers: \(error)\n".utf8))
    exit(1)
}
