import Foundation
import Testing

// Every Swift block of README.md and docs/ type-checks as written: extracted from the files at
// test time (not copied into a test, which is how the README's BusViews block lost its
// `import NotificationBus` unnoticed), each compiled alone as a main.swift with `swiftc
// -typecheck` against the modules this build made. Package.swift fragments (a block that
// starts with `dependencies:`, `targets:` or `.package(`) are ReadmePackageSnippetTests'.
@Suite("documentation snippets compile as written", .timeLimit(.minutes(5)))
struct DocSnippetTests {
    /// The repository: upwards from this file to the folder holding Package.swift.
    static let root: URL = {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path),
            folder.path != "/"
        {
            folder = folder.deletingLastPathComponent()
        }
        return folder
    }()

    /// (file, line, code) of every ```swift block of the README and docs/, fragments left out.
    static func snippets() throws -> [(file: String, line: Int, code: String)] {
        let docs = Self.root.appendingPathComponent("docs")
        var files = ["README.md"]
        if let enumerator = FileManager.default.enumerator(atPath: docs.path) {
            for case let path as String in enumerator where path.hasSuffix(".md") { files.append("docs/" + path) }
        }
        var found: [(String, Int, String)] = []
        for file in files.sorted() {
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            var block: [String]?
            var start = 0
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                if block == nil, line.trimmingCharacters(in: .whitespaces) == "```swift" {
                    block = []
                    start = index + 2
                } else if let lines = block, line.trimmingCharacters(in: .whitespaces) == "```" {
                    let first = lines.first { !$0.trimmingCharacters(in: .whitespaces).isEmpty && !$0.hasPrefix("//") } ?? ""
                    let manifest = ["dependencies:", "targets:", ".package("].contains { first.hasPrefix($0) }
                    if !manifest { found.append((file, start, lines.joined(separator: "\n"))) }
                    block = nil
                } else {
                    block?.append(String(line))
                }
            }
        }
        return found
    }

    @Test("every Swift block type-checks against this build's modules")
    func snippetsTypeCheck() async throws {
        let swiftc = try #require(findTool("swiftc"), "swiftc is not on PATH")
        // The products folder of this build: where nbus (and Modules/) are.
        let products = try NBusBinary.url().deletingLastPathComponent()
        let modules = products.appendingPathComponent("Modules").path
        try #require(FileManager.default.fileExists(atPath: modules), "no Modules folder beside \(products.path)")
        // C modules (this package's CZeroMQ, the dependencies' shims) by their module maps.
        var maps = [Self.root.appendingPathComponent("Sources/CZeroMQ/module.modulemap").path]
        let fileManager = FileManager.default
        for entry in (try? fileManager.contentsOfDirectory(atPath: products.path)) ?? [] where entry.hasSuffix(".build") {
            let map = products.appendingPathComponent(entry).appendingPathComponent("module.modulemap").path
            if fileManager.fileExists(atPath: map) { maps.append(map) }
        }
        let checkouts = products.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("checkouts")
        if let enumerator = fileManager.enumerator(atPath: checkouts.path) {
            for case let path as String in enumerator where path.hasSuffix("/module.modulemap") && path.contains("/Sources/") {
                maps.append(checkouts.appendingPathComponent(path).path)
            }
        }
        let snippets = try Self.snippets()
        #expect(snippets.count >= 3, "found only \(snippets.count) Swift blocks")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("nbus-snippets-\(getpid())")
        defer { try? FileManager.default.removeItem(at: folder) }
        for (index, snippet) in snippets.enumerated() {
            let directory = folder.appendingPathComponent("\(index)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let main = directory.appendingPathComponent("main.swift")
            try snippet.code.write(to: main, atomically: true, encoding: .utf8)
            var arguments = ["-typecheck", "-swift-version", "6", "-I", modules]
            for map in maps { arguments += ["-Xcc", "-fmodule-map-file=\(map)"] }
            let result = try await runTool(swiftc, arguments + [main.path])
            #expect(result.status == 0, "\(snippet.file):\(snippet.line) does not compile as written:\n\(result.output)\n\(snippet.code)")
        }
    }
}
