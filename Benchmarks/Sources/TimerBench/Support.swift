import CTimerCore
import Foundation

// MARK: Clocks

/// CLOCK_MONOTONIC in nanoseconds, read through the C core (a vDSO call).
@inline(__always)
public func monotonicNanoseconds() -> Int64 {
    var now: Int64 = 0
    _ = tk_clock_now(TK_CLOCK_MONOTONIC, &now)
    return now
}

/// CPU time used by the whole process (all threads), in nanoseconds.
public func processCPUNanoseconds() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
}

extension Duration {
    /// The duration in whole nanoseconds (rounded toward zero).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

// MARK: Numbers on the command line

/// `text` as a whole number written in decimal digits alone, as the tools'
/// usages show them, or nil (also past `UInt64.max`). `UInt64(_:)` and
/// `Int(_:)` alone also take a leading "+" (and `Int(_:)` a "-").
public func wholeNumber(_ text: String) -> UInt64? {
    guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
        return nil
    }
    return UInt64(text)
}

/// The seed `TK_SEED` gives: nil when it is unset or empty, and a message
/// when it is set to something other than a whole number (which a tool
/// refuses rather than run with a seed of its own choosing).
public func environmentSeed() -> (seed: UInt64?, problem: String?) {
    guard let text = ProcessInfo.processInfo.environment["TK_SEED"], !text.isEmpty else { return (nil, nil) }
    guard let seed = wholeNumber(text) else { return (nil, "TK_SEED needs a whole number") }
    return (seed, nil)
}

// MARK: Randomness

/// SplitMix64: a small seeded generator, so that a run can be repeated.
public struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value uniform in `lower ..< upper`.
    public mutating func next(in lower: Int64, _ upper: Int64) -> Int64 {
        lower + Int64(next() % UInt64(upper - lower))
    }

    /// An index uniform in `0 ..< count`.
    public mutating func index(below count: Int) -> Int {
        Int(next() % UInt64(count))
    }
}

// MARK: Statistics

/// Nearest-rank percentile of a sorted array (the core benchmark's definition).
public func percentile(_ sorted: [Int64], _ q: Double) -> Int64 {
    guard !sorted.isEmpty else { return 0 }
    var rank = Int((q * Double(sorted.count)).rounded(.up))
    rank = min(max(rank, 1), sorted.count)
    return sorted[rank - 1]
}

/// The median of unsorted values.
public func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// A summary of lateness samples, in nanoseconds.
public struct Summary: Sendable {
    public var count = 0
    public var p50: Int64 = 0
    public var p90: Int64 = 0
    public var p99: Int64 = 0
    public var max: Int64 = 0
    public var min: Int64 = 0
    public var mean = 0.0

    public init() {}

    public init(_ samples: [Int64]) {
        guard !samples.isEmpty else { return }
        let sorted = samples.sorted()
        count = sorted.count
        p50 = percentile(sorted, 0.50)
        p90 = percentile(sorted, 0.90)
        p99 = percentile(sorted, 0.99)
        max = sorted[sorted.count - 1]
        min = sorted[0]
        mean = Double(sorted.reduce(0, +)) / Double(sorted.count)
    }

    public var json: JSON {
        .object([
            ("count", .int(Int64(count))), ("p50_ns", .int(p50)), ("p90_ns", .int(p90)),
            ("p99_ns", .int(p99)), ("max_ns", .int(max)), ("min_ns", .int(min)),
            ("mean_ns", .number(mean)),
        ])
    }
}

// MARK: Output

/// Writes a progress line to stderr.
public func progress(_ message: String) {
    FileHandle.standardError.write(Data("timerkit: \(message)\n".utf8))
}

/// `value` with `decimals` digits after the point.
public func fixed(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return "-" }
    return String(format: "%.\(decimals)f", value)
}

/// Nanoseconds as microseconds with one decimal.
public func micros(_ nanoseconds: Int64) -> String {
    fixed(Double(nanoseconds) / 1000, 1)
}

/// Nanoseconds as "seconds.nanoseconds".
public func seconds(_ nanoseconds: Int64) -> String {
    let sign = nanoseconds < 0 ? "-" : ""
    let magnitude = nanoseconds.magnitude
    let fraction = String(magnitude % 1_000_000_000)
    return "\(sign)\(magnitude / 1_000_000_000).\(String(repeating: "0", count: 9 - fraction.count))\(fraction)"
}

/// `text` padded with spaces to `width` (on the left when `right` is set).
public func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let count = text.count
    guard count < width else { return text }
    let spaces = String(repeating: " ", count: width - count)
    return right ? spaces + text : text + spaces
}

/// A ratio such as "1.23x", or "-" when it cannot be formed.
public func ratio(_ numerator: Double, _ denominator: Double) -> String {
    guard numerator.isFinite, denominator.isFinite, denominator > 0 else { return "-" }
    return fixed(numerator / denominator, 2) + "x"
}

/// A small JSON value with ordered keys, rendered by hand.
public indirect enum JSON: Sendable {
    case number(Double)
    case int(Int64)
    case string(String)
    case bool(Bool)
    case null
    case array([JSON])
    case object([(String, JSON)])

    public func render(indent: Int = 0) -> String {
        let inner = String(repeating: "  ", count: indent + 1)
        let outer = String(repeating: "  ", count: indent)
        switch self {
        case .number(let value):
            guard value.isFinite else { return "null" }
            return String(format: "%.3f", value)
        case .int(let value):
            return String(value)
        case .string(let value):
            return JSON.quote(value)
        case .bool(let value):
            return value ? "true" : "false"
        case .null:
            return "null"
        case .array(let values):
            if values.isEmpty { return "[]" }
            return "[\n" + values.map { inner + $0.render(indent: indent + 1) }
                .joined(separator: ",\n") + "\n" + outer + "]"
        case .object(let members):
            if members.isEmpty { return "{}" }
            return "{\n" + members.map { inner + JSON.quote($0.0) + ": " + $0.1.render(indent: indent + 1) }
                .joined(separator: ",\n") + "\n" + outer + "}"
        }
    }

    /// The value on one line (`{"key": value, ...}`), for programs that
    /// read a line at a time.
    public func renderLine() -> String {
        switch self {
        case .array(let values):
            return "[" + values.map { $0.renderLine() }.joined(separator: ", ") + "]"
        case .object(let members):
            return "{" + members.map { JSON.quote($0.0) + ": " + $0.1.renderLine() }
                .joined(separator: ", ") + "}"
        default:
            return render()
        }
    }

    private static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

// MARK: The machine

/// What the figures were measured on.
public struct Machine {
    public var processors: Int
    public var cpuModel: String
    public var kernel: String
    public var timerSlack: Int64

    /// The 1-minute load average (other work on the machine skews every figure).
    public static func loadAverage() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "?" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    public static func describe() -> Machine {
        var model = "unknown"
        if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) {
            for line in info.split(separator: "\n") where line.hasPrefix("model name") {
                if let colon = line.firstIndex(of: ":") {
                    model = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                break
            }
        }
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        var slack: Int64 = -1
        _ = tk_timer_slack(&slack)
        return Machine(
            processors: ProcessInfo.processInfo.activeProcessorCount, cpuModel: model,
            kernel: release, timerSlack: slack)
    }
}

// MARK: Context switches

/// Voluntary context switches: times a thread gave up the CPU to wait.
public enum ContextSwitches {
    /// The calling process's main thread (what /proc/self/status reports).
    public static func mainThread() -> Int64 {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
        for line in text.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
            return Int64(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? -1
        }
        return -1
    }

    /// Every thread of the process, those that have ended included
    /// (getrusage(RUSAGE_SELF)); a sum over /proc/self/task would lose the
    /// switches of threads that ended in between.
    public static func allThreads() -> Int64 {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return -1 }
        return Int64(usage.ru_nvcsw)
    }
}

/// A measured side that did not run; the benchmark exits non-zero.
public struct SideFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

// MARK: Memory

/// Counts the process's allocations in a window. A program that interposes
/// malloc supplies it (Benchmarks/ does, with ordo-one's malloc interposer);
/// without one, allocation columns are left empty. Counting is on only
/// between `start` and `stop`; the interposer itself, though, is in every
/// allocation's path for the whole run.
public struct MallocCounter: Sendable {
    /// Starts counting from zero.
    public var start: @Sendable () -> Void
    /// Stops counting; the malloc-family and free calls since `start`.
    public var stop: @Sendable () -> (mallocs: Int, frees: Int)
    /// Bytes the interposer adds to each allocation (a header), taken off
    /// the resident-memory figures.
    public var headerBytes: Int

    public init(
        headerBytes: Int, start: @escaping @Sendable () -> Void,
        stop: @escaping @Sendable () -> (mallocs: Int, frees: Int)
    ) {
        self.headerBytes = headerBytes
        self.start = start
        self.stop = stop
    }

    /// The allocations and frees `body` makes.
    func count(_ body: () throws -> Void) rethrows -> (mallocs: Int, frees: Int) {
        start()
        var counted = false
        defer { if !counted { _ = stop() } }
        try body()
        counted = true
        return stop()
    }
}

/// The process's resident memory, read from /proc/self/statm.
public enum ResidentMemory {
    public static func bytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
