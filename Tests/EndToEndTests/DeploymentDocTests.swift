#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestSupport

/// Runs the snippets of docs/deployment.md's monitoring, logs and completions sections, as
/// written, with only the ports changed to free ones (and `nbus` the binary built here).
@Suite("docs/deployment.md snippets run as written (real processes)", .serialized, .timeLimit(.minutes(1)))
struct DeploymentDocTests {
    static let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/deployment.md")

    /// The code block right after `<!-- test: NAME -->`.
    static func snippet(_ name: String) throws -> String {
        let text = try String(contentsOf: document, encoding: .utf8)
        guard let marker = text.range(of: "<!-- test: \(name) -->"),
            let open = text.range(of: "```", range: marker.upperBound..<text.endIndex),
            let lineEnd = text.range(of: "\n", range: open.upperBound..<text.endIndex),
            let close = text.range(of: "\n```", range: lineEnd.upperBound..<text.endIndex)
        else { throw TestSetupError("no snippet '\(name)' in \(document.path)") }
        return String(text[lineEnd.upperBound..<close.lowerBound]) + "\n"
    }

    /// A TCP port free on 127.0.0.1 now.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw TestSetupError("no free port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test(
        "the broker start and the curl/promtool checks",
        .enabled(if: (findTool("promtool") != nil && findTool("curl") != nil) || getuid() == 0,
            "curl or promtool is missing and this is not root (make deps installs them as root)"))
    func brokerSnippets() async throws {
        let children = try Children()
        defer { children.killAll() }
        let ports = ["5550": try Self.freePort(), "5551": try Self.freePort(), "9464": try Self.freePort()]
        func localised(_ text: String) -> String {
            ports.reduce(text) { $0.replacingOccurrences(of: "127.0.0.1:\($1.key)", with: "127.0.0.1:\($1.value)") }
        }
        let start = localised(try Self.snippet("broker-start")).trimmingCharacters(in: .whitespacesAndNewlines)
        let words = start.split(separator: " ").map(String.init)
        try #require(words.first == "nbus")
        let broker = try children.start("broker", Array(words.dropFirst()))
        try #require(await broker.waitForStderr(containing: "monitoring on http://"), "\(broker.describe())")

        let bash = try #require(findTool("bash"))
        let checks = "set -e -o pipefail\n" + localised(try Self.snippet("broker-checks"))
        let result = try await runTool(bash, ["-c", checks])
        #expect(result.status == 0, "\(checks)\n\(result.output)")
        #expect(result.output.hasPrefix("ok\n"), "\(result.output)")
        #expect(result.output.contains("\"version\""), "\(result.output)")
    }

    @Test(
        "the Prometheus scrape configuration passes promtool check config",
        .enabled(if: findTool("promtool") != nil || getuid() == 0, "promtool is missing and this is not root"))
    func prometheusConfig() async throws {
        let promtool = try #require(findTool("promtool"))
        let folder = try TempFolder()
        defer { folder.remove() }
        let path = folder.path + "/prometheus.yml"
        try Self.snippet("prometheus-config").write(toFile: path, atomically: true, encoding: .utf8)
        // The rules file beside it, as the text says to put it: promtool loads and checks it too.
        let rules = Self.document.deletingLastPathComponent().appendingPathComponent("nbus-alerts.yml")
        try FileManager.default.copyItem(atPath: rules.path, toPath: folder.path + "/nbus-alerts.yml")
        let result = try await runTool(promtool, ["check", "config", path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("nbus-alerts.yml") && result.output.contains("rules found"), "\(result.output)")
    }

    @Test("the version and completion commands")
    func completions() async throws {
        let bash = try #require(findTool("bash"))
        let folder = try TempFolder()
        defer { folder.remove() }
        let binaryFolder = try NBusBinary.url().deletingLastPathComponent().path
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let script = "set -e\nexport HOME='\(folder.path)' PATH='\(binaryFolder):\(path)'\n" + (try Self.snippet("completions"))
        let result = try await runTool(bash, ["-c", script])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.range(of: #"^\d+\.\d+\.\d+\n$"#, options: .regularExpression) != nil, "\(result.output)")
        let completion = try String(
            contentsOfFile: folder.path + "/.local/share/bash-completion/completions/nbus", encoding: .utf8)
        #expect(completion.contains("_nbus") && completion.contains("complete"))
    }
}
