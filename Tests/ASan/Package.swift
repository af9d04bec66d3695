// swift-tools-version:6.2
// The codec tests under AddressSanitizer (`make test-asan`): NBP1 and the tests that drive its
// decoders with every vector and hostile input, and nothing else. `NBP1` is a symbolic link to
// Sources/NBP1; `CodecTests` holds one symbolic link per test file of Tests/NotificationBusTests
// that runs here, so these are the same files `make test` runs, and an edit to one is picked up.
// A NEW codec test file runs under ASan only once it has its link here too:
//   ln -s ../../NotificationBusTests/NewCodecTests.swift Tests/ASan/CodecTests/
// (it may import NBP1 only, not NotificationBus). Building these alone with ASan takes about a
// minute, where the whole package's tests took five to six.

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
