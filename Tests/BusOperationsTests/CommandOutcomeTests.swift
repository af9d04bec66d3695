import BusOperations
import Logging
import NotificationBus
import Testing

// The rules by which publish, subscribe and request end, as tables: every exit status their help
// text (and docs/command-line.md) promises for a run that started, with the lines written first.
// (An unusable endpoint, 2, and bad arguments, 64, stop a command before it runs: CommandLineTests
// and HostileInputTests run those.)
@Suite("Command outcomes: lines and exit status from what happened", .timeLimit(.minutes(1)))
struct CommandOutcomeTests {
    static let name = try! NotificationName("orders.created")

    static func stats(_ change: (inout BusStats) -> Void = { _ in }) -> BusStats {
        var stats = BusStats()
        change(&stats)
        return stats
    }

    // MARK: publish

    static let publishOptions = {
        var options = PublishOutcome.Options()
        (options.subscriberCount, options.waitSeconds, options.closeTimeout) = (1, 10, 5)
        options.connectEndpoints = ["tcp://127.0.0.1:5555"]
        return options
    }()

    struct PublishRow: CustomTestStringConvertible, Sendable {
        let rule: String
        let ending: PublishOutcome.Ending
        var stats = BusStats()
        var readsLines = false
        let exitCode: Int32
        /// Parts of the log lines, in order (level and a piece of the text).
        var lines: [(Logger.Level, String)] = []
        /// A piece of the summary's text, or nil when there must be none.
        var summary: String? = "posted"
        var testDescription: String { "\(exitCode): \(rule)" }
    }

    static let publishRows: [PublishRow] = [
        PublishRow(
            rule: "sent", ending: .finished(name: name, skippedLines: 0, verdict: nil),
            stats: stats { $0.posted = 3; $0.sent = 3 }, exitCode: 0, summary: "posted 3, sent 3, unsent 0"),
        PublishRow(
            rule: "--no-wait and no broker answered: nothing was sent, said with where and what to start",
            ending: .finished(name: name, skippedLines: 0, verdict: .nothingThere),
            stats: stats { $0.posted = 2; $0.unwanted = 2 }, exitCode: 2,
            lines: [(.error, "nothing was sent: no broker answered at tcp://127.0.0.1:5555: start one with `nbus broker`")],
            summary: "unwanted 2 (no subscriber)"),
        PublishRow(
            rule: "--no-wait, a broker there but nobody wanted them: nothing was sent, exit 2",
            ending: .finished(name: name, skippedLines: 0, verdict: nil),
            stats: stats { $0.posted = 2; $0.unwanted = 2 }, exitCode: 2,
            lines: [(.error, "nothing was sent: no subscriber of orders.created had reached this publisher (--no-wait does not wait for one")],
            summary: "unwanted 2 (no subscriber)"),
        PublishRow(
            rule: "no broker answered within --timeout: said, not blamed on subscribers",
            ending: .subscribersMissing(.nothingAnswered, name: name), exitCode: 2,
            lines: [(.error, "no broker answered at tcp://127.0.0.1:5555 within 10.0 s: start one with `nbus broker`")], summary: "posted 0"),
        PublishRow(
            rule: "subscribers that did not confirm the end of stream: a warning, still 0",
            ending: .finished(name: name, skippedLines: 0, verdict: .connected),
            stats: stats { $0.posted = 1; $0.sent = 1; $0.endOfStreamUnacknowledged = 2 }, exitCode: 0,
            lines: [(.warning, "2 subscriber(s) did not confirm the end of stream within --close-timeout (5.0 s)")]),
        PublishRow(
            rule: "a binding publisher that evicted retained values past its bound: said in the summary, still 0",
            ending: .finished(name: name, skippedLines: 0, verdict: .connected),
            stats: stats { $0.posted = 20; $0.sent = 20; $0.ownRetainedEvictions = 12 }, exitCode: 0,
            summary: "; evicted 12 retained value(s) past its bound"),
        PublishRow(
            rule: "unsent notifications", ending: .finished(name: name, skippedLines: 0, verdict: nil),
            stats: stats { $0.posted = 3; $0.sent = 1; $0.unsent = 2 }, exitCode: 1, summary: "unsent 2"),
        PublishRow(
            rule: "unsent notifications and skipped lines: unsent is the worse", ending: .finished(name: name, skippedLines: 4, verdict: nil),
            stats: stats { $0.posted = 3; $0.unsent = 3 }, readsLines: true, exitCode: 1, summary: "skipped 4 malformed"),
        PublishRow(
            rule: "another failure: the reason, no summary", ending: .failed(reason: "reading standard input failed: EIO"),
            exitCode: 1, lines: [(.error, "reading standard input failed")], summary: nil),
        PublishRow(
            rule: "no subscriber in time", ending: .subscribersMissing(.timedOut(arrived: 0), name: name), exitCode: 2,
            lines: [(.error, "no subscriber for orders.created reached this publisher within 10.0 s")], summary: "posted 0"),
        PublishRow(
            rule: "a key the server refused, during the wait", ending: .subscribersMissing(.refused, name: name),
            stats: stats { $0.handshakesRefused = 1 }, exitCode: 2, lines: [(.error, "the server refused this publisher's key")]),
        PublishRow(
            rule: "--no-wait: a key the server refused, found at close", ending: .finished(name: name, skippedLines: 0, verdict: .refused),
            stats: stats { $0.posted = 1; $0.unwanted = 1; $0.handshakesRefused = 1 }, exitCode: 2,
            lines: [(.error, "the server refused this publisher's key")]),
        PublishRow(
            rule: "--no-wait: a handshake that never completed", ending: .finished(name: name, skippedLines: 0, verdict: .failed),
            stats: stats { $0.posted = 1; $0.unwanted = 1; $0.handshakesFailed = 3 }, exitCode: 2,
            lines: [(.error, "hung up on every handshake (3 failed")]),
        PublishRow(
            rule: "skipped input lines", ending: .finished(name: name, skippedLines: 2, verdict: nil),
            stats: stats { $0.posted = 5; $0.sent = 5 }, readsLines: true, exitCode: 2, summary: "skipped 2 malformed or unsendable line(s)"),
    ]

    @Test("publish", arguments: publishRows)
    func publish(_ row: PublishRow) {
        var options = Self.publishOptions
        options.readsLines = row.readsLines
        let outcome = PublishOutcome.of(row.ending, stats: row.stats, options: options)
        #expect(outcome.exitCode == row.exitCode)
        Self.expectLines(outcome, row.lines)
        Self.expectSummary(outcome, row.summary, command: "publish")
    }

    @Test("publish: several subscribers waited for say how many came; the JSON summary has every field")
    func publishDetails() {
        var options = Self.publishOptions
        options.subscriberCount = 3
        let outcome = PublishOutcome.of(.subscribersMissing(.timedOut(arrived: 2), name: Self.name), stats: BusStats(), options: options)
        #expect(outcome.texts(at: .error).first?.contains("2 of 3 subscribers for orders.created") == true)
        let json = PublishOutcome.summary(BusStats(), skippedLines: nil).line(.json)
        #expect(json.hasPrefix(#"{"summary":"publish","posted":0,"sent":0,"unsent":0,"#), "\(json)")
        #expect(json.contains(#""skippedLines":0"#))
    }

    // MARK: subscribe

    struct SubscribeRow: CustomTestStringConvertible, Sendable {
        let rule: String
        let ending: SubscribeOutcome.Ending
        var count: Int? = nil
        var printed = 0
        let exitCode: Int32
        var lines: [(Logger.Level, String)] = []
        /// Whether the summary says a stream's tail is unknown (stopped before the streams ended).
        var tailUnknown = false
        var testDescription: String { "\(exitCode): \(rule)" }
    }

    static let subscribeRows: [SubscribeRow] = [
        SubscribeRow(rule: "--count reached", ending: .printingEnded, count: 3, printed: 3, exitCode: 0),
        SubscribeRow(rule: "stopped by a signal", ending: .signalled, count: 3, printed: 1, exitCode: 0, tailUnknown: true),
        SubscribeRow(rule: "--timeout without --count", ending: .timedOut, printed: 5, exitCode: 0, tailUnknown: true),
        SubscribeRow(
            rule: "--count not reached before --timeout", ending: .timedOut, count: 3, printed: 1, exitCode: 1,
            lines: [(.error, "printed 1 of 3 before the 2.0 s timeout")], tailUnknown: true),
        SubscribeRow(
            rule: "a key the server refused", ending: .refused, exitCode: 2, lines: [(.error, "the server refused this subscriber's key")]),
        SubscribeRow(
            rule: "no broker answered within --connect-timeout", ending: .nothingAnswered, count: 3, exitCode: 2,
            lines: [(.error, "no broker answered at tcp://127.0.0.1:5551 within 2.0 s: start one with `nbus broker`")]),
    ]

    @Test("subscribe", arguments: subscribeRows)
    func subscribe(_ row: SubscribeRow) {
        var options = SubscribeOutcome.Options()
        (options.count, options.timeout, options.maxMemory) = (row.count, 2, 4_096)
        (options.connectEndpoints, options.connectWait) = (["tcp://127.0.0.1:5551"], 2)
        let bus = Self.stats {
            $0.handshakesRefused = row.ending == .refused ? 1 : 0
            $0.trackedStreams = 1
        }
        let counts = SubscribeOutcome.Counts(printed: row.printed, perPattern: [("orders.>", SubscriptionStats())], bus: bus)
        let outcome = SubscribeOutcome.of(row.ending, counts: counts, options: options)
        #expect(outcome.exitCode == row.exitCode)
        Self.expectLines(outcome, row.lines)
        Self.expectSummary(outcome, "printed \(row.printed);", command: "subscribe")
        #expect(outcome.summary?.text.contains("tail unknown for 1 stream(s)") == row.tailUnknown)
        #expect(outcome.detailLines.isEmpty, "no --stats, no detail lines")
    }

    @Test("subscribe --stats: the detail lines before a text summary, the same details in the JSON object")
    func subscribeStats() {
        var options = SubscribeOutcome.Options()
        (options.showsStats, options.maxMemory) = (true, 150)
        let bus = Self.stats { $0.memoryLimitResets = 2 }
        let counts = SubscribeOutcome.Counts(printed: 0, perPattern: [("a.>", SubscriptionStats()), ("b.*", SubscriptionStats())], bus: bus)
        let outcome = SubscribeOutcome.of(.printingEnded, counts: counts, options: options)
        #expect(outcome.detailLines.count == 3)
        #expect(outcome.detailLines.first?.hasPrefix("nbus subscribe: a.>: ") == true)
        #expect(outcome.summary?.text.contains("memory resets 2 (over --max-memory 150 MiB: every connection dropped)") == true)
        let json = outcome.summary?.line(.json) ?? ""
        #expect(json.contains(#""patterns":[{"pattern":"a.>""#) && json.contains(#""bus":{"framesReceived":0"#), "\(json)")
    }

    @Test("subscribe: streams joined after their start are said, with the notifications before the first seen of each")
    func subscribeJoinedLate() {
        let quiet = SubscribeOutcome.of(
            .printingEnded, counts: SubscribeOutcome.Counts(printed: 3, perPattern: [("a.>", SubscriptionStats())], bus: BusStats()),
            options: SubscribeOutcome.Options())
        #expect(quiet.summary?.text.contains("joined") == false, "nothing to say when every stream was seen from its start")
        let bus = Self.stats {
            $0.streamsJoinedLate = 2
            $0.notificationsBeforeJoining = 17_220
        }
        let outcome = SubscribeOutcome.of(
            .printingEnded, counts: SubscribeOutcome.Counts(printed: 3, perPattern: [("a.>", SubscriptionStats())], bus: bus),
            options: SubscribeOutcome.Options())
        let text = outcome.summary?.text ?? ""
        #expect(text.contains("joined 2 stream(s) after their start: the 17220 notification(s) before the first printed"), "\(text)")
        let json = outcome.summary?.line(.json) ?? ""
        #expect(json.contains(#""streamsJoinedLate":2,"notificationsBeforeJoining":17220"#), "\(json)")
    }

    @Test("subscribe: the SHOULD counters of NBP-1 §12.1 are in the summary, under BusStats's names")
    func subscribeShouldCounters() {
        let counts = { (bus: BusStats) in
            SubscribeOutcome.Counts(printed: 0, perPattern: [("a.>", SubscriptionStats())], bus: bus)
        }
        let quiet = SubscribeOutcome.of(.printingEnded, counts: counts(BusStats()), options: SubscribeOutcome.Options())
        #expect(quiet.summary?.text.contains("control") == false)
        #expect(quiet.summary?.line(.json).contains(#""unknownControlMessages":0,"malformedEndOfStreamRecords":0"#) == true)
        let bus = Self.stats {
            $0.unknownControlMessages = 4
            $0.malformedEndOfStreamRecords = 1
        }
        let outcome = SubscribeOutcome.of(.printingEnded, counts: counts(bus), options: SubscribeOutcome.Options())
        let text = outcome.summary?.text ?? ""
        #expect(text.contains("unknown control messages 4"), "\(text)")
        #expect(text.contains("malformed end-of-stream records 1"), "\(text)")
        let json = outcome.summary?.line(.json) ?? ""
        #expect(json.contains(#""unknownControlMessages":4,"malformedEndOfStreamRecords":1"#), "\(json)")
    }

    // MARK: request

    static let requestOptions = {
        var options = RequestOutcome.Options()
        (options.frontend, options.backend, options.timeout) = ("ipc:///tmp/f", "ipc:///tmp/b", 5)
        return options
    }()

    struct RequestRow: CustomTestStringConvertible, Sendable {
        let rule: String
        let result: Result<BusNotification, BusError>
        var verdict = HandshakeVerdict.connected
        var stats = BusStats()
        let exitCode: Int32
        var line: String? = nil
        var output: String = ""
        var testDescription: String { "\(exitCode): \(rule)" }
    }

    static func reply(_ payload: String, status: String? = nil) -> Result<BusNotification, BusError> {
        var headers = NotificationHeaders()
        if let status { headers[RequestReply.statusHeader] = status }
        return .success(BusNotification(name: name, payload: Array(payload.utf8), headers: headers))
    }

    static let requestRows: [RequestRow] = [
        RequestRow(rule: "a reply, a newline added", result: reply("42"), exitCode: 0, output: "42\n"),
        RequestRow(rule: "a reply that ends its line", result: reply("42\n"), exitCode: 0, output: "42\n"),
        RequestRow(
            rule: "no reply within --timeout", result: .failure(.timedOut(what: "a reply", after: .seconds(5))), exitCode: 1,
            line: "no reply to orders.created within 5.0 s"),
        RequestRow(
            rule: "no responders", result: .failure(.noResponders(name)), exitCode: 2,
            line: "no responders: nothing subscribes to orders.created at ipc:///tmp/f"),
        RequestRow(
            rule: "no responders, no broker reached", result: .failure(.noResponders(name)), verdict: .nothingThere, exitCode: 2,
            line: "no broker reached at ipc:///tmp/f and ipc:///tmp/b"),
        RequestRow(
            rule: "no broker reached within --timeout", result: .failure(.timedOut(what: "a reply", after: .seconds(5))),
            verdict: .nothingThere, exitCode: 2, line: "no broker reached at ipc:///tmp/f and ipc:///tmp/b within 5.0 s"),
        RequestRow(
            rule: "a key the broker refused", result: .failure(.timedOut(what: "a reply", after: .seconds(5))), verdict: .refused,
            stats: stats { $0.handshakesRefused = 1 }, exitCode: 2,
            line: "--allow-publishers and --allow-subscribers folders (a requester posts and subscribes)"),
        RequestRow(rule: "another failure of the bus", result: .failure(.closed), exitCode: 2, line: "\(BusError.closed)"),
        RequestRow(
            rule: "the responder replied with status error", result: reply("division by zero", status: RequestReply.error),
            exitCode: 3, line: "the responder failed: division by zero"),
    ]

    @Test("request", arguments: requestRows)
    func request(_ row: RequestRow) {
        let outcome = RequestOutcome.of(row.result, name: Self.name, verdict: row.verdict, stats: row.stats, options: Self.requestOptions)
        #expect(outcome.exitCode == row.exitCode)
        #expect(String(decoding: outcome.standardOutput, as: UTF8.self) == row.output)
        Self.expectLines(outcome, row.line.map { [(.error, $0)] } ?? [])
        #expect(outcome.summary == nil)
    }

    // MARK: helpers

    static func expectLines(_ outcome: CommandOutcome, _ expected: [(Logger.Level, String)], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(outcome.lines.count == expected.count, "\(outcome.lines)", sourceLocation: sourceLocation)
        for (line, (level, piece)) in zip(outcome.lines, expected) {
            #expect(line.level == level && line.text.contains(piece), "\(line) should hold \(level): \(piece)", sourceLocation: sourceLocation)
        }
    }

    static func expectSummary(_ outcome: CommandOutcome, _ piece: String?, command: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let piece else {
            #expect(outcome.summary == nil, sourceLocation: sourceLocation)
            return
        }
        let line = outcome.summary?.line(.text) ?? ""
        #expect(line.hasPrefix("nbus \(command): ") && line.contains(piece), "\(line) should hold \(piece)", sourceLocation: sourceLocation)
    }
}
