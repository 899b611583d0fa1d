// countdown-peers: many countdowns three ways, side by side in one run:
// TimerKit's CountdownCenter, one LoopTimer per countdown, and one ticker
// walking every countdown each second (the OYCountDownManager approach).
//
//   swift run -c release countdown-peers [--quick] [--json] [--seed N]
//
// The default is the README's run: 1,000,000 countdowns, 1,000 observed.
// --quick is a smoke run (20,000 countdowns, 100 observed).
import CountdownBench
import Foundation
import TimerBench

var config = CountdownBench.Config.standard
var json = false
var seed: UInt64?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick":
        config = .quick
    case "--json":
        json = true
    case "--seed":
        guard let value = arguments.popFirst().flatMap(wholeNumber) else {
            FileHandle.standardError.write(Data("countdown-peers: --seed needs a number\n".utf8))
            exit(64)
        }
        seed = value
    default:
        FileHandle.standardError.write(Data("""
            countdown-peers: unknown option \(argument)
            usage: countdown-peers [--quick] [--json] [--seed N]

            """.utf8))
        exit(64)
    }
}
let fromEnvironment = environmentSeed()
if seed == nil, let problem = fromEnvironment.problem {
    FileHandle.standardError.write(Data("countdown-peers: \(problem)\n".utf8))
    exit(64)
}
let chosen = seed ?? fromEnvironment.seed
    ?? UInt64(truncatingIfNeeded: monotonicNanoseconds() ^ Int64(getpid()))
let machine = Machine.describe()
let load = Machine.loadAverage()
progress("countdown-peers, seed \(chosen)")
let report = CountdownBench.run(config, seed: chosen)
print(json ? report.json.render() : report.text(machine: machine, load: load))
exit(report.failures.isEmpty ? 0 : 1)
