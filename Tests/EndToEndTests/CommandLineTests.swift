import Foundation
import Testing

/// The command line as a newcomer meets it: what a mistake says, what `--help` shows first, and
/// the shapes scripts read (JSON notifications, summaries) as docs/command-line.md documents them.
@Suite("nbus command line", .timeLimit(.minutes(2)))
struct CommandLineTests {
    @Test("publish 'orders.*' says a name cannot hold wildcards (patterns are for subscribing), exit 64")
    func publishWildcardName() async throws {
        let children = try Children()
        defer { children.killAll() }
        for name in ["orders.*", "orders.>", "ord*ers"] {
            let output = try #require(try await children.run("publish", ["publish", name, "hi"]))
            #expect(output.status == 64, "\(output.stderrText)")
            #expect(output.stderrText.contains("a notification name cannot hold wildcards"), "\(output.stderrText)")
            #expect(output.stderrText.contains("patterns, to subscribe with"), "\(output.stderrText)")
            #expect(!output.stderrText.contains("whole tokens"), "\(output.stderrText)")
        }
    }
}
