import Foundation
import Testing

// `make install` as a packager runs it: into a temporary DESTDIR, with this build's nbus (the
// `install-files` half, so the test builds nothing), then the installed binary runs, and
// `make uninstall` takes every file away again.
@Suite("make install and make uninstall", .timeLimit(.minutes(2)))
struct InstallTests {
    @Test("install-files into a DESTDIR: nbus runs from PREFIX/bin, completions and the unit under PREFIX/share; uninstall removes them")
    func installAndUninstall() async throws {
        let make = try #require(findTool("make"), "make is not on PATH")
        let binary = try NBusBinary.url()
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("nbus-install-\(getpid())")
        defer { try? FileManager.default.removeItem(at: destination) }
        let prefix = "/opt/nbus-test"
        let root = DocSnippetTests.root.path
        let common = ["-C", root, "DESTDIR=\(destination.path)", "PREFIX=\(prefix)"]
        let installed = try await runTool(make, common + ["install-files", "NBUS_BIN=\(binary.path)"])
        #expect(installed.status == 0, "\(installed.output)")
        let base = destination.path + prefix
        let nbus = base + "/bin/nbus"
        #expect(FileManager.default.isExecutableFile(atPath: nbus))
        let version = try await runTool(URL(fileURLWithPath: nbus), ["--version"])
        #expect(version.status == 0 && !version.output.isEmpty, "\(version.output)")
        let help = try await runTool(URL(fileURLWithPath: nbus), ["broker", "--help"])
        #expect(help.status == 0 && help.output.contains("--subscriber-budget"), "\(help.output)")
        let bash = (try? String(contentsOfFile: base + "/share/bash-completion/completions/nbus", encoding: .utf8)) ?? ""
        #expect(bash.contains("broker") && bash.contains("subscribe"), "bash completion: \(bash.prefix(200))")
        for file in ["/share/zsh/site-functions/_nbus", "/share/fish/vendor_completions.d/nbus.fish", "/share/doc/nbus/deployment.md", "/share/doc/nbus/command-line.md"] {
            let attributes = try? FileManager.default.attributesOfItem(atPath: base + file)
            let size = (attributes?[.size] as? Int) ?? 0
            #expect(size > 0, "\(file) missing or empty")
        }
        let unit = (try? String(contentsOfFile: base + "/share/nbus/nbus-broker.service", encoding: .utf8)) ?? ""
        #expect(unit.contains("ExecStart=\(prefix)/bin/nbus broker"), "the unit does not start PREFIX's nbus:\n\(unit)")
        let removed = try await runTool(make, common + ["uninstall"])
        #expect(removed.status == 0, "\(removed.output)")
        let left = FileManager.default.enumerator(atPath: destination.path)?.allObjects.compactMap { $0 as? String }
            .filter { path in
                var isDirectory: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: destination.path + "/" + path, isDirectory: &isDirectory)
                return !isDirectory.boolValue
            } ?? []
        #expect(left.isEmpty, "left after uninstall: \(left)")
    }
}
