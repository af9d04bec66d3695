import Foundation
import Testing

// Every Swift block of README.md and docs/ type-checks as written: extracted from the files at
// test time (not copied into a test, which is how the README's BusViews block lost its
// `import NotificationBus` unnoticed), each compiled alone as a main.swift with `swiftc
// -typecheck` against the modules this build made. Package.swift fragments (a block that
// starts with `dependencies:`, `targets:` or `.package(`) are ReadmePackageSnippetTests'. README's
// programs are also targets of the package (examples/readme), run here to their end.
@Suite("documentation snippets compile, and README's programs run, as written", .timeLimit(.minutes(5)))
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
            // A warning is what a reader pasting it meets first (the views block's "no 'async'
            // operations occur within 'await' expression", twice).
            #expect(!result.output.contains("warning:"), "\(snippet.file):\(snippet.line) compiles with warnings:\n\(result.output)")
        }
    }

    /// README's programs: the folder under examples/readme (a target of the package, built with
    /// it) and the executable it makes.
    static let readmePrograms = [("Typed", "readme-typed"), ("Bytes", "readme-bytes"), ("Views", "readme-views")]

    @Test("README's programs run as written: each ends on its own and prints, through a pipe, what it says it prints")
    func readmeProgramsRun() async throws {
        let readme = try Self.snippets().filter { $0.file == "README.md" }
        let children = try Children()
        defer { children.killAll() }
        let products = children.executable.deletingLastPathComponent()
        for (folder, executable) in Self.readmePrograms {
            let source = try String(
                contentsOf: Self.root.appendingPathComponent("examples/readme/\(folder)/main.swift"), encoding: .utf8)
            // The same text as a README block, so what runs here is what the README shows.
            let block = try #require(
                readme.first { $0.code + "\n" == source }, "examples/readme/\(folder)/main.swift is no longer a README block as written")
            let said = try #require(
                block.code.firstMatch(of: /\n\/\/ Prints "([^"]+)"\.\n?$/), "README.md:\(block.line): no closing `// Prints \"...\".` line")
            // Standard output is a pipe here, block-buffered: a program that did not end (or
            // flush) would show nothing.
            let program = try children.start(executable, command: products.appendingPathComponent(executable), [])
            let output = try #require(await program.waitForExit(timeout: .seconds(60)), "README.md:\(block.line) did not end:\n\(program.describe())")
            #expect(!output.bySignal && output.status == 0, "README.md:\(block.line): \(program.describe())")
            #expect(output.stdoutText == String(said.output.1) + "\n", "README.md:\(block.line): \(program.describe())")
        }
        // Every complete README program is run here, but the service (ReadmePackageSnippetTests:
        // it runs until SIGTERM, with a broker).
        let programs = readme.filter { $0.code.hasPrefix("import ") && !$0.code.contains("ServiceGroup") }
        #expect(programs.count == Self.readmePrograms.count, "README programs not run: \(programs.map(\.line))")
    }
}
