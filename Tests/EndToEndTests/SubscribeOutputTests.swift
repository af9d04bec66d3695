import Foundation
import Testing

/// What `nbus subscribe` prints: once per notification, exactly `--count`, one line each.
@Suite("nbus subscribe output", .timeLimit(.minutes(2)))
struct SubscribeOutputTests {
    @Test("A notification several patterns match is printed once, and --count is exact")
    func overlappingPatternsPrintOnce() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("o.sock")
        // Three patterns that all match a.b: each has its own subscription, and each receives it.
        let subscriber = try children.start(
            "subscriber", ["subscribe", "a.>", "a.b", "a.*", "--connect", endpoint, "--count", "3", "--timeout", "30"])
        let publisher = try children.start(
            "publisher", ["publish", "a.b", "p{n}", "--count", "50", "--bind", endpoint, "--timeout", "30"])
        expectExit(await publisher.waitForExit(), 0, publisher)
        expectExit(await subscriber.waitForExit(timeout: .seconds(10)), 0, subscriber)
        let payloads = subscriber.output.stdoutLines.map { $0.components(separatedBy: " payload=").last ?? "" }
        #expect(payloads == ["p1", "p2", "p3"], "\(subscriber.describe())")
        #expect(subscriber.output.stderrText.contains("nbus subscribe: printed 3; lost upstream 0"), "\(subscriber.describe())")
    }

    @Test("A payload or header with a newline or an escape is one quoted text line, not two lines")
    func controlCharactersAreQuoted() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("q.sock")
        let subscriber = try children.start(
            "subscriber", ["subscribe", "x.y", "--connect", endpoint, "--count", "2", "--timeout", "30"])
        let publisher = try children.start(
            "publisher",
            ["publish", "x.y", "line1\nx.z seq=99 publisher=0 payload=forged\u{1B}[31m", "--count", "2", "--header", "k=v\tw",
             "--bind", endpoint, "--timeout", "30"])
        expectExit(await publisher.waitForExit(), 0, publisher)
        expectExit(await subscriber.waitForExit(timeout: .seconds(10)), 0, subscriber)
        let lines = subscriber.output.stdoutLines
        #expect(lines.count == 2, "\(subscriber.describe())")
        for line in lines {
            #expect(line.hasPrefix("x.y seq="), "\(line)")
            #expect(line.hasSuffix(#"headers=[k="v\tw"] payload="line1\nx.z seq=99 publisher=0 payload=forged\u001b[31m""#), "\(line)")
            #expect(!line.unicodeScalars.contains { $0.value < 0x20 }, "\(line)")
        }
    }

    @Test("10,000 patterns, options among them and after --: each is subscribed, the last one receives")
    func tenThousandPatterns() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("many.sock")
        // ArgumentParser parses a long positional list in quadratic time (70 s for these in a
        // debug build); nbus joins the patterns before parsing (PositionalJoin). Their times:
        // BENCHMARKS.md. Here: every one is taken, in order, whatever lies between them.
        let patterns = (0..<10_000).map { "p\($0).x" }
        let arguments =
            ["subscribe"] + patterns[..<5_000] + ["--stats", "--connect", endpoint] + patterns[5_000...]
            + ["--count", "2", "--timeout", "90", "--", "last.x"]
        let subscriber = try children.start("subscriber", arguments)
        let publisher = try children.start(
            "publisher", ["publish", "last.x", "p{n}", "--count", "2", "--bind", endpoint, "--timeout", "90"])
        expectExit(await publisher.waitForExit(timeout: .seconds(100)), 0, publisher)
        expectExit(await subscriber.waitForExit(timeout: .seconds(30)), 0, subscriber)
        #expect(subscriber.output.stdoutLines.count == 2, "\(subscriber.describe())")
        // --stats lists every subscription by its pattern, in command-line order.
        let stderr = subscriber.output.stderrText
        let listed = ["p0.x", "p4999.x", "p5000.x", "p9999.x", "last.x"].map { stderr.range(of: "subscribe: \($0): ")?.lowerBound }
        #expect(listed.allSatisfy { $0 != nil } && listed.compactMap { $0 } == listed.compactMap { $0 }.sorted(), "\(stderr.suffix(800))")
    }
}
