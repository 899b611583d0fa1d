// expect: error: static member 'nanoseconds' cannot be used on instance of type 'Duration'
//
// `import TimerKit` brings no helper extension of the standard library's
// types (the benchmarks' `Duration.nanoseconds` stays in Benchmarks/, and
// TimerKit's own conversions are internal to the package).
import TimerKit

let count = Duration.seconds(1).nanoseconds
