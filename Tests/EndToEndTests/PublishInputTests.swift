#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

// `nbus publish` input and argument handling, with real processes over ipc in a fresh temp folder:
// `--lines` as bytes, skipped lines counted, JSON lines in the shape `nbus subscribe --format json`
// prints, which subscribers are waited for, and arguments refused before any wait. Every wait is
// bounded and waits on something a process shows, never on a sleep.

/// Starts `nbus arguments...` reading standard input from a file holding `input` (written into the
/// temp folder first): exact bytes, and no pipe for the test to keep fed.
private func startWithInput(_ children: Children, _ label: String, _ input: [UInt8], _ arguments: [String]) throws -> Child {
    let file = "\(children.folder.path)/input-\(label.filter { $0.isLetter || $0.isNumber }).bin"
    try Data(input).write(to: URL(fileURLWithPath: file))
    return try children.start(
        label, command: URL(fileURLWithPath: "/bin/sh"),
        ["-c", #"exec "$0" "$@" < "$NBUS_TEST_INPUT""#, children.executable.path] + arguments,
        environment: ["NBUS_TEST_INPUT": file])
}

/// The notification objects among `nbus subscribe --format json` lines (gap lines left out).
private func notificationObjects(_ lines: [String]) -> [[String: Any]] {
    lines.compactMap { line in
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
            object["gap"] == nil
        else { return nil }
        return object
    }
}

/// A notification's payload bytes from its JSON object: `payload` as UTF-8, or `payloadBase64`.
private func payloadBytes(_ object: [String: Any]) -> [UInt8]? {
    if let text = object["payload"] as? String { return Array(text.utf8) }
    if let encoded = object["payloadBase64"] as? String, let data = Data(base64Encoded: encoded) { return Array(data) }
    return nil
}

@Suite("nbus publish: input lines and arguments (real processes, ipc)", .serialized, .timeLimit(.minutes(1)))
struct PublishInputTests {
    // MARK: --lines as text

    @Test("--lines: a line over the maximum payload is skipped and counted, the rest is sent, exit 2")
    func overlongTextLineIsSkipped() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("l.sock")
        let input = Array("first\n".utf8) + Array(repeating: UInt8(ascii: "y"), count: 2_000_000) + Array("\nthird\n".utf8)

        let subscriber = try children.start(
            "subscriber", ["subscribe", "l.x", "--connect", endpoint, "--count", "2", "--timeout", "30", "--format", "json"])
        let publisher = try startWithInput(
            children, "publisher", input, ["publish", "l.x", "--lines", "--bind", endpoint, "--timeout", "30"])

        let published = await publisher.waitForExit()
        expectExit(published, 2, publisher)
        let stderr = published?.stderrText ?? ""
        #expect(
            stderr.contains("line 2: payload of 2000000 bytes exceeds the maximum of 1048576, skipped"), "\(publisher.describe())")
        #expect(stderr.contains("posted 2, sent 2, unsent 0, skipped 1 "), "\(publisher.describe())")

        #expect(await subscriber.waitForStdoutLines(2), "\(subscriber.describe())")
        expectExit(await awaitSubscriberExit(subscriber), 0, subscriber)
        let received = parseJSONLines(subscriber.output.stdoutLines)
        #expect(received.notifications.map(\.payload) == ["first", "third"])
        #expect(received.notifications.map(\.sequence) == [1, 2])
    }

    @Test("--lines: bytes are sent unchanged (not UTF-8 too); a \\r before \\n is removed; a last unterminated line is sent")
    func textLinesAreBytes() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("b.sock")
        let lines: [[UInt8]] = [
            Array("bad ".utf8) + [0xFF, 0xFE] + Array(" utf8".utf8), Array("crlf".utf8), [], Array("a\rb".utf8),
            Array("ünïcödé".utf8), Array("last".utf8),
        ]
        let input =
            lines[0] + Array("\r\n".utf8) + lines[1] + Array("\r\n".utf8) + Array("\n".utf8) + lines[3] + Array("\n".utf8)
            + lines[4] + Array("\n".utf8) + lines[5]

        let subscriber = try children.start(
            "subscriber",
            ["subscribe", "b.x", "--connect", endpoint, "--count", "\(lines.count)", "--timeout", "30", "--format", "json"])
        let publisher = try startWithInput(
            children, "publisher", input, ["publish", "b.x", "--lines", "--bind", endpoint, "--timeout", "30"])

        let published = await publisher.waitForExit()
        expectExit(published, 0, publisher)
        #expect(
            published?.stderrText.contains("posted 6, sent 6, unsent 0, skipped 0 ") == true, "\(publisher.describe())")
        #expect(await subscriber.waitForStdoutLines(lines.count), "\(subscriber.describe())")
        expectExit(await awaitSubscriberExit(subscriber), 0, subscriber)
        let received = notificationObjects(subscriber.output.stdoutLines)
        #expect(received.map(payloadBytes) == lines.map { Optional($0) }, "\(subscriber.describe())")
    }
}
