// timer-cost: a TimerKit LoopTimer's schedule + invalidate and churn against
// the C core's, at 1k, 100k and 1M pending, the sides side by side in each
// run, in a program without timer-peers' malloc interposer (allocations per
// timer are counted there). Each run is a process of its own: a process lays
// out its memory anew, which moves the figures from one run to the next by
// more than the reps inside a run differ, so the cost targets are judged on
// the median of several runs (5 by default, 1 with --quick).
//
//   swift run -c release timer-cost [--quick] [--seed N] [--runs N]
import Foundation
import TimerBench

func usage(_ message: String) -> Never {
    FileHandle.standardError.write(Data("""
        timer-cost: \(message)
        usage: timer-cost [--quick] [--seed N] [--runs N]

        """.utf8))
    exit(64)
}

var quick = false
var seed = UInt64(truncatingIfNeeded: monotonicNanoseconds())
var runs: Int?
/// Set in a run started by another timer-cost (an option the usage leaves
/// out): the run's figures go on its last line of output.
var handsOverFigures = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick": quick = true
    case "--seed":
        guard let value = arguments.popFirst().flatMap(wholeNumber) else { usage("--seed needs a number") }
        seed = value
    case "--runs":
        guard let value = arguments.popFirst().flatMap(wholeNumber), (1...20).contains(value) else {
            usage("--runs needs a number from 1 to 20")
        }
        runs = Int(value)
    case "--hand-over-figures": handsOverFigures = true
    default: usage("unknown option \(argument)")
    }
}
let runCount = runs ?? (quick ? 1 : 5)
let figuresPrefix = "figures: "

if runCount == 1 {
    let (text, failures, figures) = TimerCost.run(quick: quick, seed: seed)
    print(text)
    if handsOverFigures { print(figuresPrefix + figures.encoded) }
    for failure in failures { FileHandle.standardError.write(Data("timer-cost: FAILED: \(failure)\n".utf8)) }
    exit(failures.isEmpty ? 0 : 1)
}

// Several runs: each in a process of its own (this program again), seeds
// `seed`, `seed + 1`, ...; the first run's table is printed in full.
// This very program, whatever becomes of the file it was started from.
let program = URL(fileURLWithPath: "/proc/self/exe")
let seeds = (0..<runCount).map { seed &+ UInt64($0) }
var all: [CostTargets.Figures] = []
var lines: [String] = []
/// Why the runs stopped early, if they did.
var failure: String?
for (index, runSeed) in seeds.enumerated() {
    let process = Process()
    process.executableURL = program
    process.arguments = ["--seed", "\(runSeed)", "--runs", "1", "--hand-over-figures"] + (quick ? ["--quick"] : [])
    let output = Pipe()
    process.standardOutput = output
    do {
        try process.run()
    } catch {
        FileHandle.standardError.write(Data("timer-cost: FAILED: cannot start \(program.path): \(error)\n".utf8))
        exit(1)
    }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    var body = text.split(separator: "\n", omittingEmptySubsequences: false)
    if body.last == "" { body.removeLast() }
    let ended = process.terminationReason == .uncaughtSignal
        ? "was killed by signal \(process.terminationStatus)" : "exited with status \(process.terminationStatus)"
    // What the run printed, without the figures it hands over.
    let printed = body.filter { !$0.hasPrefix(figuresPrefix) }.joined(separator: "\n")
    guard process.terminationStatus == 0, process.terminationReason == .exit else {
        print(printed)
        failure = "run \(index + 1) (seed \(runSeed)) \(ended)"
        break
    }
    guard let last = body.last, last.hasPrefix(figuresPrefix),
        let figures = CostTargets.Figures(decoding: last.dropFirst(figuresPrefix.count))
    else {
        print(printed)
        failure = "run \(index + 1) (seed \(runSeed)) ended without its figures"
        break
    }
    if index == 0 {
        print("timer-cost: \(runCount) runs, each in a process of its own, seeds \(seeds.map(String.init).joined(separator: ", ")); the first in full:\n")
        print(printed)
    }
    all.append(figures)
    lines.append(TimerCost.runLine(seed: runSeed, figures, sizes: TimerCost.sizes(quick: quick)))
}
// The runs that finished, even if a later one failed; then the verdicts,
// or why there are none (after everything printed, in a combined log too).
if !lines.isEmpty {
    print("")
    print("Run by run (the LoopTimer's ratios to the C core, and its pair in ns):")
    lines.forEach { print($0) }
}
if let failure {
    fflush(nil)  // every output stream, standard output with them
    FileHandle.standardError.write(Data("timer-cost: FAILED: \(failure)\n".utf8))
    exit(1)
}
print("")
CostTargets.lines(runs: all, sizes: TimerCost.sizes(quick: quick)).forEach { print($0) }
