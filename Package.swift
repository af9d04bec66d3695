// swift-tools-version:6.2
// NotificationBus: a cross-process NotificationCenter carried by ZeroMQ.
// Dependency arrows point one way: nbus -> BusBench -> BusViews -> NotificationBus -> ZeroMQ -> CZeroMQ,
// nbus -> BusOperations -> NotificationBus, nbus and BusBench -> ToolSupport (no bus, no ZeroMQ),
// and NotificationBus -> NBP1 (the wire protocol, pure Swift: no ZeroMQ, no Foundation), nbus -> OTLPTracing
// (--otlp-endpoint; the Tracing API and swift-log only), or, with the SwiftOTel trait, nbus -> swift-otel.

import PackageDescription

let strictSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
]

let package = Package(
    name: "NotificationBus",
    // Linux only, so no Apple platform is declared: CZeroMQ.h includes Linux headers
    // (sys/eventfd.h, sys/prctl.h, malloc.h). Tools 6.2: swift-subprocess, swift-service-lifecycle
    // and swift-log need it, and so does `nonisolated(nonsending)` in NotificationBus.
    products: [
        .library(name: "NBP1", targets: ["NBP1"]),
        .library(name: "ZeroMQ", targets: ["ZeroMQ"]),
        .library(name: "NotificationBus", targets: ["NotificationBus"]),
        .library(name: "BusViews", targets: ["BusViews"]),
        // A bus or a broker in a swift-service-lifecycle ServiceGroup, and errors that read well
        // from `localizedDescription`: light (swift-service-lifecycle and FoundationEssentials).
        .library(name: "BusServices", targets: ["BusServices"]),
        // Operating a bus or a broker: metrics (Prometheus), the monitoring HTTP endpoints, log
        // formatting; re-exports BusServices.
        .library(name: "BusOperations", targets: ["BusOperations"]),
        .executable(name: "nbus", targets: ["nbus"]),
        .executable(name: "nbus-baseline", targets: ["ZeroMQBaseline"]),
    ],
    // Off by default: `swift build --traits SwiftOTel` (or `make install TRAITS=SwiftOTel`) makes
    // `nbus --otlp-endpoint` export through swift-otel instead of OTLPTracing's exporter. Opt-in
    // because swift-otel brings async-http-client, swift-nio-ssl, swift-nio-http2 and
    // swift-protobuf: a debug build of nbus with it took 252 s in CI here, the whole package with
    // its tests 220 s without it (docs/tracing.md).
    traits: [
        .trait(
            name: "SwiftOTel",
            description: "nbus --otlp-endpoint exports through swift-otel (OTLP/HTTP protobuf) instead of the built-in exporter"),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        // Trace context across processes: the Tracing API only (Instrumentation, Tracing, and its
        // ServiceContext module); no exporter. Pure Swift, no Foundation, a few seconds to build.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // The monitoring HTTP server: HummingbirdCore over SwiftNIO, on NIO's shared event loops (one thread in nbus).
        // FlyingFox (chosen first for a lighter build) parsed on Swift's cooperative pool and re-scanned
        // a growing header line: two slow clients pinned both threads and the broker ignored SIGTERM.
        // NIO's parser bounds the request head, and its channels take idle timeouts and a connection
        // cap. No default traits: swift-configuration and full Foundation are not needed here.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        // What the server's own channel handlers (connection cap, request deadlines) are written
        // against; already Hummingbird's dependencies, at the versions it needs.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0", traits: []),
        // Documentation only (`make docs`: the DocC catalogs of NotificationBus and BusViews); a
        // command plugin, never linked into a product.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
        // Built only with the SwiftOTel trait (above). OTLP/HTTP only: its gRPC exporter is not needed.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // libzmq from the system's default paths (Debian's libzmq3-dev: /usr/include, and the
        // module map links -lzmq). Not through pkg-config: Debian's libzmq.pc requires krb5-gssapi,
        // whose `-isystem /usr/include/mit-krb5` SwiftPM refuses with a warning on every `swift`
        // command (zmq.h needs nothing from it). A libzmq elsewhere: `swift build -Xcc -I/its/include
        // -Xlinker -L/its/lib`.
        .systemLibrary(name: "CZeroMQ"),
        // NBP/1 itself: names, patterns, headers, the notification value, the envelope codec, control
        // names and end-of-stream records. What a second implementation or the fuzzer needs, nothing else.
        .target(
            name: "NBP1",
            swiftSettings: strictSettings
        ),
        .target(
            name: "ZeroMQ",
            dependencies: ["CZeroMQ"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "NotificationBus",
            dependencies: [
                "NBP1",
                "ZeroMQ",
                // swift-log alone (no Foundation): the broker takes an optional Logger.
                .product(name: "Logging", package: "swift-log"),
                // W3C trace context in the headers when a tracer is bootstrapped.
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strictSettings
        ),
        // BusService, BrokerService and the LocalizedError conformances: what every application
        // that runs a bus in a ServiceGroup wants, without Prometheus or an HTTP server.
        .target(
            name: "BusServices",
            dependencies: [
                "NotificationBus", "NBP1", "ZeroMQ",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        // Operating a bus or a broker: logs (swift-log), metrics (swift-metrics, Prometheus), the
        // monitoring HTTP endpoints and the version. Above NotificationBus, so the core stays light.
        .target(
            name: "BusOperations",
            dependencies: [
                "NotificationBus", "BusServices",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
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
        // `nbus --otlp-endpoint`: a Tracer (swift-distributed-tracing) whose spans go to an OTLP/HTTP
        // receiver, protobuf written by hand over a small blocking HTTP/1.1 client on a thread of its
        // own. swift-otel only with the SwiftOTel trait: its dependencies (swift-nio-ssl,
        // async-http-client, swift-nio-http2, swift-protobuf) add minutes to every build configuration.
        // Not in NotificationBus, which uses the Tracing API only.
        .target(
            name: "OTLPTracing",
            dependencies: [
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // What the command-line tool and the benchmark share that is neither bus nor ZeroMQ: a
        // one-shot signal (signals, a child's exit, a worker's go line) and lines read from a file
        // descriptor (publish --lines, request's stdin, the workers' stdin, a child's stdout).
        .target(
            name: "ToolSupport",
            swiftSettings: strictSettings
        ),
        .target(
            name: "BusBench",
            dependencies: [
                "ToolSupport",
                "BusViews",
                "NotificationBus",
                "ZeroMQ",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                // ChildProcess imports SystemPackage (Subprocess's file descriptors) on Linux.
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strictSettings
        ),
        // The raw-libzmq baseline the bus is measured against: C, libzmq alone, same bytes, one frame.
        .executableTarget(
            name: "ZeroMQBaseline",
            dependencies: ["CZeroMQ"],
            // C includes <zmq.h> itself: the module map's `link "zmq"` serves Swift importers only.
            linkerSettings: [.linkedLibrary("zmq")]
        ),
        .executableTarget(
            name: "nbus",
            dependencies: [
                "NotificationBus",
                "BusBench",
                "ToolSupport",
                "BusOperations",
                "OTLPTracing",
                "ZeroMQ",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                // NIOSingletons: one event loop thread for --http, set in main.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["SwiftOTel"])),
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
        // examples/service: a bus in a swift-service-lifecycle ServiceGroup, as README shows it.
        .executableTarget(
            name: "orders-service",
            dependencies: [
                "BusServices", "NotificationBus",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "examples/service/OrdersService",
            swiftSettings: strictSettings
        ),
        // README's programs as written there (DocSnippetTests checks each file against its block and
        // runs it): typed messages, the byte API, a BusViews view.
        .executableTarget(
            name: "readme-typed", dependencies: ["NotificationBus"], path: "examples/readme/Typed", swiftSettings: strictSettings),
        .executableTarget(
            name: "readme-bytes", dependencies: ["NotificationBus"], path: "examples/readme/Bytes", swiftSettings: strictSettings),
        .executableTarget(
            name: "readme-views", dependencies: ["BusViews", "NotificationBus"], path: "examples/readme/Views",
            swiftSettings: strictSettings),
        // What every test target shares: bounded waits, one-shot signals, temp folders, endpoints.
        .target(
            name: "TestSupport",
            dependencies: ["ZeroMQ"],
            path: "Tests/Support",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ZeroMQTests",
            dependencies: ["ZeroMQ", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "BusViewsTests",
            dependencies: ["BusViews", "NotificationBus", "ZeroMQ", "TestSupport"],
            swiftSettings: strictSettings
        ),
        // Real processes: builds nbus and drives it (broker, publish, subscribe) over ipc.
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["nbus", "NotificationBus", "ZeroMQ", "TestSupport", "ToolSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "BusOperationsTests",
            dependencies: [
                "BusOperations", "TestSupport", "NotificationBus",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "BusServicesTests",
            dependencies: [
                "BusServices", "NotificationBus", "ZeroMQ", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "OTLPTracingTests",
            dependencies: [
                "OTLPTracing", "TestSupport", "ToolSupport",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ToolSupportTests",
            dependencies: ["ToolSupport", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "BusBenchTests",
            dependencies: ["BusBench", "NotificationBus", "TestSupport", "ToolSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "NotificationBusTests",
            dependencies: [
                "NotificationBus", "NBP1", "ZeroMQ", "TestSupport", .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
