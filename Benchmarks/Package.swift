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
// Both use the root package's TimerBench library (the peers that need no
// package) and add SwiftNIO's event loop as a peer (NIOPeers).

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
            name: "NIOPeers",
            dependencies: [
                .product(name: "TimerBench", package: "TimerKit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "timer-peers",
            dependencies: [
                "NIOPeers",
                .product(name: "TimerBench", package: "TimerKit"),
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
            ]
        ),
        .executableTarget(
            name: "TimerBenchmarks",
            dependencies: [
                "NIOPeers",
                .product(name: "TimerBench", package: "TimerKit"),
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
