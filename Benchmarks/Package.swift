// swift-tools-version: 6.1
//
// TimerKit's full benchmarks, beside the root package so that the root keeps
// no package dependencies.
//
//   swift package benchmark           the ordo-one/benchmark suite
//                                     (Benchmarks/TimerBenchmarks)
//   swift run -c release timer-peers  the side-by-side table with ratios,
//                                     TimerKit against Foundation, Dispatch,
//                                     Task.sleep and SwiftNIO (the README's table)
//
//   swift run -c release countdown-peers
//                                     many countdowns three ways: CountdownCenter,
//                                     a LoopTimer each, one ticker walking all
//                                     (the README's countdown table)
//   swift run -c release frame-peers  frame pacing at 60, 120 and 240 Hz: FrameTicker,
//                                     a Task.sleep loop, DispatchSourceTimer and NIO's
//                                     scheduleRepeatedTask (the README's frame table)
//   swift run -c release queue-peers  QueueTimer against DispatchSourceTimer: lateness,
//                                     create + cancel against pending timers, wake-ups and
//                                     context switches at 10 % leeway (the README's queue table)
//   swift test                        the harnesses' own tests (TimerBenchTests,
//                                     CountdownBenchTests, FrameBenchTests)
//
// TimerBench is the harness and the peers that need no package (Foundation,
// Dispatch, Task.sleep, the C core); CBenchSupport its C side (the bare
// timerfd floor); NIOPeers adds SwiftNIO's event loop as a peer.
// CTimerCoreBench/core_bench.c, the C core's own benchmark, is a plain C
// program (scripts/run.sh builds it).

import PackageDescription

let package = Package(
    name: "TimerKitBenchmarks",
    dependencies: [
        .package(name: "TimerKit", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/ordo-one/malloc-interposer", from: "1.6.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
    ],
    targets: [
        .target(
            name: "CBenchSupport",
            cSettings: [
                .define("_GNU_SOURCE"),
            ]
        ),
        .target(
            name: "TimerBench",
            dependencies: [
                "CBenchSupport",
                .product(name: "TimerKit", package: "TimerKit"),
                .product(name: "CTimerCore", package: "TimerKit"),
            ]
        ),
        .testTarget(
            name: "TimerBenchTests",
            dependencies: ["TimerBench", "CBenchSupport"]
        ),
        .target(
            name: "CountdownBench",
            dependencies: [
                "CBenchSupport",
                "TimerBench",
                .product(name: "TimerKit", package: "TimerKit"),
                .product(name: "Countdowns", package: "TimerKit"),
            ]
        ),
        .executableTarget(
            name: "countdown-peers",
            dependencies: ["CountdownBench", "TimerBench"]
        ),
        .testTarget(
            name: "CountdownBenchTests",
            dependencies: [
                "CountdownBench",
                .product(name: "TimerKit", package: "TimerKit"),
            ]
        ),
        .target(
            name: "InterposedMallocs",
            dependencies: [
                "TimerBench",
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
            ]
        ),
        .target(
            name: "FrameBench",
            dependencies: [
                "CBenchSupport",
                "TimerBench",
                .product(name: "TimerKit", package: "TimerKit"),
            ]
        ),
        .executableTarget(
            name: "frame-peers",
            dependencies: [
                "FrameBench",
                "InterposedMallocs",
                "NIOPeers",
                "TimerBench",
            ]
        ),
        .testTarget(
            name: "FrameBenchTests",
            dependencies: ["FrameBench"]
        ),
        .target(
            name: "NIOPeers",
            dependencies: [
                "FrameBench",
                "TimerBench",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .target(
            name: "ExecutorBench",
            dependencies: [
                "TimerBench",
                .product(name: "TimerKit", package: "TimerKit"),
            ]
        ),
        .executableTarget(
            name: "executor-peers",
            dependencies: ["ExecutorBench", "TimerBench"]
        ),
        .executableTarget(
            name: "queue-peers",
            dependencies: [
                "TimerBench",
                .product(name: "TimerKit", package: "TimerKit"),
            ]
        ),
        .executableTarget(
            name: "timer-cost",
            dependencies: ["TimerBench"]
        ),
        .executableTarget(
            name: "timer-peers",
            dependencies: [
                "InterposedMallocs",
                "NIOPeers",
                "TimerBench",
            ]
        ),
        .executableTarget(
            name: "TimerBenchmarks",
            dependencies: [
                "NIOPeers",
                "TimerBench",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/TimerBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
