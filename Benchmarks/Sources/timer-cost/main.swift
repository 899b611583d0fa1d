// timer-cost: a TimerKit LoopTimer's schedule + invalidate and churn against
// the C core's, at 1k, 100k and 1M pending, in one run, in a program without
// timer-peers' malloc interposer (allocations per timer are counted there).
//
//   swift run -c release timer-cost [--quick] [--seed N]
import Foundation
import TimerBench

var quick = false
var seed = UInt64(truncatingIfNeeded: monotonicNanoseconds())
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick": quick = true
    case "--seed":
        guard let value = arguments.popFirst().flatMap({ UInt64($0) }) else {
            FileHandle.standardError.write(Data("timer-cost: --seed needs a number\n".utf8))
            exit(64)
        }
        seed = value
    default:
        FileHandle.standardError.write(Data("""
            timer-cost: unknown option \(argument)
            usage: timer-cost [--quick] [--seed N]

            """.utf8))
        exit(64)
    }
}
let (text, failures) = TimerCost.run(quick: quick, seed: seed)
print(text)
for failure in failures { FileHandle.standardError.write(Data("timer-cost: FAILED: \(failure)\n".utf8)) }
exit(failures.isEmpty ? 0 : 1)
