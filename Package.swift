// swift-tools-version:6.0
//
// TimerKit: a Linux timing library for Swift with a C core.
//
// The C core's public header and module map live in the top-level `include/`
// folder, so that C programs use the same `-Iinclude` path as Swift. SwiftPM
// only accepts a public headers folder inside the target's own path, hence
// the C target is rooted at the package folder with its sources narrowed to
// Sources/CTimerCore. The C tests, the fuzzer, the benchmark and the example
// are plain C programs built by scripts/test.sh and scripts/run.sh, not
// SwiftPM targets.

import PackageDescription

let package = Package(
    name: "TimerKit",
    products: [
        .library(name: "CTimerCore", targets: ["CTimerCore"]),
        .library(name: "TimerKit", targets: ["TimerKit"]),
        .executable(name: "timerkit", targets: ["timerkit"]),
        // The side-by-side benchmarks (`timerkit bench`, and Benchmarks/,
        // which adds SwiftNIO): TimerKit and its peers measured in one run.
        .library(name: "TimerBench", targets: ["TimerBench"]),
    ],
    targets: [
        .target(
            name: "CTimerCore",
            path: ".",
            sources: ["Sources/CTimerCore"],
            publicHeadersPath: "include",
            cSettings: [
                // The C files also define it themselves, guarded by #ifndef.
                .define("_GNU_SOURCE"),
            ],
            linkerSettings: [
                .linkedLibrary("pthread"),
            ]
        ),
        .target(
            name: "TimerKit",
            dependencies: ["CTimerCore"]
        ),
        .target(
            name: "CBenchSupport",
            cSettings: [
                .define("_GNU_SOURCE"),
            ]
        ),
        .target(
            name: "TimerBench",
            dependencies: ["TimerKit", "CTimerCore", "CBenchSupport"]
        ),
        .executableTarget(
            name: "timerkit",
            dependencies: ["TimerBench", "TimerKit", "CTimerCore"]
        ),
        .testTarget(
            name: "TimerKitTests",
            dependencies: ["TimerKit", "CTimerCore"]
        ),
        .testTarget(
            name: "TimerBenchTests",
            dependencies: ["TimerBench", "CBenchSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
