// swift-tools-version:6.1
// NotificationBus: a cross-process NotificationCenter carried by ZeroMQ.
// Dependency arrows point one way: nbus -> BusBench -> BusViews -> NotificationBus -> ZeroMQ -> CZeroMQ.

import PackageDescription

let strictSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
]

let package = Package(
    name: "NotificationBus",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ZeroMQ", targets: ["ZeroMQ"]),
        .library(name: "NotificationBus", targets: ["NotificationBus"]),
        .library(name: "BusViews", targets: ["BusViews"]),
        .executable(name: "nbus", targets: ["nbus"]),
        .executable(name: "nbus-baseline", targets: ["ZeroMQBaseline"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections.git", exact: "1.6.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", exact: "0.2.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", exact: "1.0.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", exact: "2.13.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CZeroMQ",
            pkgConfig: "libzmq",
            providers: [.apt(["libzmq3-dev"])]
        ),
        .target(
            name: "ZeroMQ",
            dependencies: ["CZeroMQ"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "NotificationBus",
            dependencies: [
                "ZeroMQ",
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "BusViews",
            dependencies: [
                "NotificationBus",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "BusBench",
            dependencies: [
                "BusViews",
                "NotificationBus",
                "ZeroMQ",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ],
            swiftSettings: strictSettings
        ),
        // The raw-libzmq baseline the bus is measured against: C, libzmq alone, same bytes, one frame.
        .executableTarget(
            name: "ZeroMQBaseline",
            dependencies: ["CZeroMQ"]
        ),
        .executableTarget(
            name: "nbus",
            dependencies: [
                "NotificationBus",
                "BusBench",
                "ZeroMQ",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        // examples/views: a 3-tab TabView and a 100-row LazyList consuming a feed from `nbus publish`.
        .executableTarget(
            name: "views-demo",
            dependencies: ["BusViews", "NotificationBus"],
            path: "examples/views/ViewsDemo",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ZeroMQTests",
            dependencies: ["ZeroMQ"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "BusViewsTests",
            dependencies: ["BusViews", "NotificationBus"],
            swiftSettings: strictSettings
        ),
        // Real processes: builds nbus and drives it (broker, publish, subscribe) over ipc.
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["nbus", "NotificationBus", "ZeroMQ"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "BusBenchTests",
            dependencies: ["BusBench"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "NotificationBusTests",
            dependencies: ["NotificationBus", "ZeroMQ"],
            swiftSettings: strictSettings
        ),
    ]
)
