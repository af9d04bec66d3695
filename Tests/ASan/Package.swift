// swift-tools-version:6.2
// The codec tests under AddressSanitizer (`make test-asan`): NBP1 and the tests that drive its
// decoders with every vector and hostile input, and nothing else. Both folders are symbolic links
// into the main package (Sources/NBP1, Tests/NotificationBusTests), so these are the same files
// `make test` runs; building them alone with ASan takes about a minute where the whole package's
// tests took five to six.

import PackageDescription

let package = Package(
    name: "NBP1ASan",
    targets: [
        .target(name: "NBP1", path: "NBP1", swiftSettings: [.swiftLanguageMode(.v6)]),
        .testTarget(
            name: "CodecASanTests",
            dependencies: ["NBP1"],
            path: "CodecTests",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
