#if canImport(Glibc)
import Glibc
#endif
import Foundation
import NotificationBus
import Testing
import TestSupport
import ZeroMQ

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

    @Test("A reader that closes stdout ends subscribe as SIGPIPE does, with --http too (no trap)")
    func closedStandardOutputWithHTTP() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("pipe.sock")
        // `| head -n 1`: the second line meets a closed pipe. With --http, SwiftNIO ignores
        // SIGPIPE, and Foundation's FileHandle.write trapped on EPIPE (exit 132, a backtrace).
        // The shell prints subscribe's own status after head's line.
        let script = #""$0" subscribe 'h.>' --connect "$1" --http 127.0.0.1:0 --timeout 30 2>err.txt; echo "status $?" >status.txt"#
        let pipeline = try children.start(
            "subscriber", command: URL(fileURLWithPath: "/bin/sh"),
            ["-c", "(" + script + ") | head -n 1", children.executable.path, endpoint])
        let publisher = try children.start(
            "publisher", ["publish", "h.x", "p{n}", "--count", "200", "--rate", "100", "--bind", endpoint, "--timeout", "30"])
        expectExit(await pipeline.waitForExit(timeout: .seconds(60)), 0, pipeline)
        publisher.signal(SIGTERM)
        #expect(pipeline.output.stdoutLines.count == 1, "\(pipeline.describe())")
        let status = (try? String(contentsOfFile: children.folder.path + "/status.txt", encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: children.folder.path + "/err.txt", encoding: .utf8)) ?? ""
        #expect(status == "status 141\n", "subscribe ended by SIGPIPE (128 + 13); stderr: \(stderr.suffix(600))")
        #expect(!stderr.contains("Fatal error"), "\(stderr.suffix(600))")
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

    @Test("Per-record flags are printed: a number in every JSON line, flags=0x.. in text when not 0")
    func flagsArePrinted() async throws {
        let children = try Children()
        defer { children.killAll() }
        let context = try Context()
        defer { context.terminate() }
        // A foreign producer (a raw XPUB) that sets flags NotificationBus never sets.
        let raw = try context.socket(.xpub)
        defer { raw.close() }
        try raw.set(.linger, .milliseconds(2_000))
        try raw.set(.receiveTimeout, .milliseconds(30_000))
        // Each subscriber's own f.x subscription, not only the first one of that prefix.
        try raw.set(.xpubVerbose, true)
        let endpoint = children.folder.ipc("flags.sock")
        try raw.bind(endpoint)
        let json = try children.start(
            "json", ["subscribe", "f.x", "--connect", endpoint, "--count", "3", "--timeout", "30", "--format", "json"])
        try raw.awaitSubscription(Array("f.x".utf8) + [0])
        let text = try children.start("text", ["subscribe", "f.x", "--connect", endpoint, "--count", "3", "--timeout", "30"])
        try raw.awaitSubscription(Array("f.x".utf8) + [0])
        let name = try NotificationName("f.x")
        func notification(_ sequence: UInt64, flags: UInt8) -> BusNotification {
            BusNotification(name: name, payload: Array("p\(sequence)".utf8), sequence: sequence, publisherID: 9, timestamp: 1, flags: flags)
        }
        // One version 1 frame with flags 0xa5, then a batch whose records carry 0 and 0x01.
        try raw.send(try EnvelopeCodec.encode(notification(1, flags: 0xA5)))
        try raw.send(try EnvelopeCodec.encodeBatch([notification(2, flags: 0), notification(3, flags: 0x01)]))
        expectExit(await json.waitForExit(), 0, json)
        expectExit(await text.waitForExit(), 0, text)
        let flags = try json.output.stdoutLines.map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            return (object["flags"] as? NSNumber)?.intValue
        }
        #expect(flags == [0xA5, 0, 1], "\(json.describe())")
        let lines = text.output.stdoutLines
        try #require(lines.count == 3, "\(text.describe())")
        #expect(lines[0].hasSuffix(" flags=0xa5 payload=p1"), "\(lines[0])")
        #expect(!lines[1].contains("flags="), "\(lines[1])")
        #expect(lines[2].hasSuffix(" flags=0x01 payload=p3"), "\(lines[2])")
    }

    @Test("subscribe --http ends quietly, its summary last: exit 1 at --timeout before --count, 0 on SIGTERM")
    func httpShutdownIsQuiet() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("http.sock")
        // Every way it ends, the summary is stderr's last line and nothing of the --http server's
        // threads follows it. The timeout path (the command's exit status thrown) used to cancel
        // the server: "Waiting on child channel: CancellationError()" and SwiftNIO's "Cannot
        // schedule tasks on an EventLoop that has already shut down", after the summary, every run.
        func expectQuietEnd(_ output: ChildOutput?, _ child: Child) {
            let lines = output?.stderrText.split(separator: "\n") ?? []
            #expect(lines.last?.hasPrefix("nbus subscribe: printed 0;") == true, "\(child.describe())")
            #expect(output?.stderrText.contains("EventLoop") == false, "\(child.describe())")
            #expect(output?.stderrText.contains("CancellationError") == false, "\(child.describe())")
        }
        for run in 1...3 {
            let timedOut = try children.start(
                "timed out \(run)",
                ["subscribe", "h.x", "--connect", endpoint, "--http", "127.0.0.1:0", "--count", "5", "--timeout", "0.5", "--connect-timeout", "0"])
            let output = await timedOut.waitForExit()
            expectExit(output, 1, timedOut)
            expectQuietEnd(output, timedOut)

            let signalled = try children.start(
                "signalled \(run)", ["subscribe", "h.x", "--connect", endpoint, "--http", "127.0.0.1:0", "--timeout", "60", "--connect-timeout", "0"])
            #expect(await signalled.waitForStderr(containing: "monitoring on http://"), "\(signalled.describe())")
            signalled.signal(SIGTERM)
            let stopped = await signalled.waitForExit()
            expectExit(stopped, 0, signalled)
            expectQuietEnd(stopped, signalled)
        }
    }
}
