// swift-tools-version:6.1
// Micro-benchmarks for NotificationBus, kept in their own package so that the root
// package's `swift build` / `swift test` never resolve or build package-benchmark.
//
// Run from this directory:
//   swift package --disable-sandbox benchmark
// See ../BENCHMARKS.md for the figures and how to read them.

import PackageDescription

let package = Package(
    name: "NotificationBusBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Only the MallocInterposer trait: it gives the malloc counters. Listing traits
        // replaces the package's default set, which on Linux + Swift 6.3 would also
        // enable RuntimeInterposer (ARC counters) and pull in swift-runtime-interposer.
        .package(url: "https://github.com/ordo-one/benchmark.git", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(name: "NotificationBus", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "CodecBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "NotificationBus", package: "NotificationBus"),
            ],
            path: "Benchmarks/CodecBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
