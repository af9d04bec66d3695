import Foundation
import Testing

/// README's "Depending on the package": its `Package.swift` lines name only products and package
/// versions this package has, and its Swift code is `examples/service` (the `orders-service`
/// target, compiled with the package), so neither can drift from what builds.
@Suite("README: depending on the package")
struct ReadmePackageSnippetTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The fenced code blocks of README's section `heading`, in order.
    static func codeBlocks(under heading: String) throws -> [String] {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "\n\(heading)\n").dropFirst().first)
            .components(separatedBy: "\n## ").first ?? ""
        let parts = section.components(separatedBy: "```")
        // Odd parts are inside fences: drop each block's language line.
        return stride(from: 1, to: parts.count, by: 2).map { parts[$0].drop { $0 != "\n" }.dropFirst().description }
    }

    static func matches(_ pattern: String, in text: String) throws -> [[String]] {
        let regex = try Regex(pattern)
        return text.matches(of: regex).map { match in
            (1..<match.output.count).compactMap { match.output[$0].substring.map(String.init) }
        }
    }

    @Test("The Package.swift lines name this package's products and its dependencies' versions")
    func packageLines() throws {
        let blocks = try Self.codeBlocks(under: "### Depending on the package")
        try #require(blocks.count == 2, "two code blocks, got \(blocks.count)")
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let libraries = Set(try Self.matches(#"\.library\(name: "([A-Za-z0-9]+)""#, in: manifest).map { $0[0] })
        let products = try Self.matches(#"\.product\(name: "([A-Za-z]+)", package: "NotificationBus"\)"#, in: blocks[0])
        #expect(!products.isEmpty)
        for product in products { #expect(libraries.contains(product[0]), "no library product \(product[0])") }
        let dependencies = try Self.matches(#"\.package\(url: "([^"]+)", from: "([^"]+)"\)"#, in: blocks[0])
        #expect(!dependencies.isEmpty)
        // The package itself, named by wherever it was cloned from, at the released version (the
        // newest in CHANGELOG.md); every other dependency as Package.swift names it.
        let changelog = try String(contentsOf: Self.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let released = try #require(changelog.firstMatch(of: /\n## (\d+\.\d+\.\d+)/)).output.1
        let own = dependencies.filter { $0[0].hasSuffix("/NotificationBus") }
        #expect(own.count == 1 && own.first?[1] == String(released), "\(own), released \(released)")
        for dependency in dependencies where !dependency[0].hasSuffix("/NotificationBus") {
            #expect(manifest.contains(#".package(url: "\#(dependency[0])", from: "\#(dependency[1])")"#), "\(dependency)")
        }
    }

    @Test("The service code is examples/service/OrdersService/main.swift, which the package compiles")
    func serviceCode() throws {
        let blocks = try Self.codeBlocks(under: "### Depending on the package")
        let example = try String(
            contentsOf: Self.root.appendingPathComponent("examples/service/OrdersService/main.swift"), encoding: .utf8)
        let code = try #require(example.range(of: "import BusServices").map { String(example[$0.lowerBound...]) })
        #expect(blocks.last == code)
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(manifest.contains(#"path: "examples/service/OrdersService""#))
    }
}
