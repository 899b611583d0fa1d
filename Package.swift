// swift-tools-version:6.2
//
// TimerKit: a Linux timing library for Swift with a C core.
//
//   CTimerCore   the C core: clocks, the deadline heap, timers, the loop, the
//                manual clock. Its header and module map are in the top-level
//                `include/`, the path C programs use too.
//   CTimerSNTP   the SNTP client (RFC 4330) in C, a module of its own.
//   TimerKit     the Swift API over the core: loops, timers, modes, perform
//                requests, clocks, ticks, the manual clock.
//   TrustedTime  server time carried on the boot clock: TrustedClock, time
//                samples, HTTP dates, the SNTP source, persistence.
//   Countdowns   one ticker for many countdowns, flash sales, cooldowns that
//                survive a restart.
//   timerkit     the command: `timerkit clocks`, `timerkit trusted-time`.
//
// No package dependencies. The benchmarks, which compare TimerKit with
// SwiftNIO and others, are the package in Benchmarks/.
//
// SwiftPM only accepts a public headers folder inside the target's own path,
// hence the core is rooted at the package folder with its sources narrowed to
// Sources/CTimerCore. The C tests, the fuzzers and the C example are plain C
// programs built by scripts/test.sh and scripts/run.sh.

import PackageDescription

let package = Package(
    name: "TimerKit",
    products: [
        .library(name: "CTimerCore", targets: ["CTimerCore"]),
        .library(name: "TimerKit", targets: ["TimerKit"]),
        .library(name: "TrustedTime", targets: ["TrustedTime"]),
        .library(name: "Countdowns", targets: ["Countdowns"]),
        .executable(name: "timerkit", targets: ["timerkit"]),
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
            name: "CTimerSNTP",
            cSettings: [
                .define("_GNU_SOURCE"),
            ]
        ),
        .target(
            name: "TimerKit",
            dependencies: ["CTimerCore"]
        ),
        .target(
            name: "TrustedTime",
            dependencies: ["TimerKit", "CTimerCore", "CTimerSNTP"]
        ),
        .target(
            name: "Countdowns",
            dependencies: ["TimerKit", "TrustedTime"]
        ),
        .executableTarget(
            name: "timerkit",
            dependencies: ["TimerKit", "TrustedTime", "Countdowns", "CTimerCore"]
        ),
        .testTarget(
            name: "TimerKitTests",
            dependencies: ["TimerKit", "CTimerCore"]
        ),
        .testTarget(
            name: "TrustedTimeTests",
            dependencies: ["TrustedTime", "TimerKit"]
        ),
        .testTarget(
            name: "CountdownsTests",
            dependencies: ["Countdowns", "TrustedTime", "TimerKit"]
        ),
        // The Swift facade out of memory: the test program links with the
        // C allocator's functions wrapped, so that the C core's k-th
        // allocation can fail (see Tests/CAllocationFaults).
        .target(
            name: "CAllocationFaults",
            path: "Tests/CAllocationFaults"
        ),
        .testTarget(
            name: "FaultInjectionTests",
            dependencies: ["TimerKit", "CAllocationFaults"],
            linkerSettings: [
                .unsafeFlags([
                    "-Xlinker", "--wrap=malloc", "-Xlinker", "--wrap=calloc",
                    "-Xlinker", "--wrap=realloc", "-Xlinker", "--wrap=posix_memalign",
                ])
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
