import ArgumentParser
import BusOperations
import Logging
import Foundation
import NotificationBus
import ServiceLifecycle

struct Publish: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Post notifications named NAME.",
        discussion: """
            Example (broker running): nbus publish orders.created 'order {n}' --count 3
            Exit status, details: docs/command-line.md (share/doc/nbus/ when installed).
            """)

    @Argument(help: "The notification name, e.g. orders.created (with --lines --input json: for lines without a name).")
    var name: String

    @Argument(help: "The payload text (default: empty); {n} in it becomes the notification's number (1-based). Not with --lines.")
    var payload: String?

    @Option(name: .shortAndLong, parsing: .unconditional, help: "How many notifications to post (default: 1). Not with --lines.")
    var count: Int?

    @Option(parsing: .unconditional, help: ArgumentHelp("Notifications per second (default: as fast as possible). Not with --lines.", valueName: "per-second"))
    var rate: Double?

    @Option(
        parsing: .unconditional, help: ArgumentHelp(
            "Payload size in bytes: the payload text repeated (or 'x') to this length. Not with --lines.", valueName: "bytes"))
    var size: Int?

    @Option(name: .customLong("header"), help: ArgumentHelp("A header key=value. Repeatable, each key once.", valueName: "key=value"))
    var headers: [String] = []

    @Option(help: ArgumentHelp("Content type: unspecified, text, json, cbor, msgpack, protobuf, or a code 0-255.", valueName: "type"))
    var contentType: String = "unspecified"

    @Option(help: ArgumentHelp(
        "The summary on stderr: text (one line) or json (one object; the default with --log-format json).",
        valueName: "format"))
    var format: CommandSummary.Format?

    @Flag(help: "Retain: brokers that keep retained values (nbus broker --retain-names) keep each post as its name's current value for subscribers that start later (nbus subscribe --retained); an empty payload clears it.")
    var retain = false

    @Option(name: .customLong("retain-for"), parsing: .unconditional, help: ArgumentHelp(
        "With --retain: seconds the broker keeps each value (0.001 or more; default: until replaced, cleared or evicted).",
        valueName: "seconds"))
    var retainFor: Double?

    @Flag(help: "Read notifications from standard input, one per line.")
    var lines = false

    @Option(help: ArgumentHelp("With --lines: text (each line is a payload, the default) or json.", valueName: "format"))
    var input: LineFormat?

    @OptionGroup var endpoints: EndpointOptions

    @OptionGroup var curve: CurveOptions

    @OptionGroup var monitoring: BusHTTPOptions

    @OptionGroup var logging: LoggingOptions

    @OptionGroup var tracing: TracingOptions

    @Option(
        help: ArgumentHelp(
            "With --bind and --curve-secret: the folder of subscriber public keys (*.pub) to admit.",
            valueName: "folder"))
    var allowSubscribers: String?

    @Flag(help: "Send at once, without waiting for a subscriber (not with --retain: the broker that keeps the value is one).")
    var noWait = false

    @Flag(name: .customLong("no-batch"), help: "One frame per notification: no batch frames (NBP-1 §2.3), for receivers written before them.")
    var noBatch = false

    @Option(
        parsing: .unconditional, help: ArgumentHelp(
            "Wait for this many subscribers of NAME (with --input json: of the first line's name) before sending (default: 1).",
            valueName: "n"))
    var subscribers: Int?

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds to wait for subscribers (default: 10).", valueName: "seconds"))
    var timeout: Double?

    @Option(parsing: .unconditional, help: ArgumentHelp(
        "ZeroMQ send high-water mark, messages per peer (default with --connect 1,250 batch frames of 32 KiB, 40 MiB, and 125, 4 MiB, when every --connect is tcp; with --no-batch 10,000 and 1,000; with --bind, unless given, each subscriber may fall 64 MiB behind instead).",
        valueName: "messages"))
    var hwm: Int32?

    @Option(
        name: .customLong("subscriber-budget"), parsing: .unconditional,
        help: ArgumentHelp(
            "With --bind: MiB a subscriber may fall behind before it costs anyone else anything (default 64, as nbus broker's); one that takes nothing for 0.5 s past it is disconnected (it reconnects and counts the gap), one slow but moving makes this publisher wait (0: --hwm messages per subscriber instead, and no disconnection).",
            valueName: "MiB"))
    var subscriberBudget: Int?

    @Option(
        name: .customLong("close-timeout"),
        parsing: .unconditional, help: ArgumentHelp(
            "Seconds closing may take: sending what is queued and waiting for subscribers to acknowledge the end of stream.",
            valueName: "seconds"))
    var closeTimeout: Double = Double(BusConfiguration(publish: []).closeTimeoutInMilliseconds) / 1_000

    @Option(
        name: .customLong("stall-limit"),
        parsing: .unconditional, help: ArgumentHelp(
            "Seconds a broker (tcp) may leave what was sent unacknowledged, or its window closed, before it is dropped and redialled; posts meanwhile reach nobody and are counted as gaps, instead of waiting for a frozen or vanished broker: 0 (wait for ever) or 0.001 to 86400 (default: 60 when connecting, 0 when binding).",
            valueName: "seconds"))
    var stallLimit: Double?

    enum LineFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    /// The largest payload a post accepts (the bus's default; publish has no option to change it).
    static let maximumPayload = BusConfiguration(publish: []).maximumPayload

    /// The --rate accepted: from one notification every 10,000 s (below, the pause between two
    /// would not be a sensible `Duration`) to a billion per second (beyond, no pacing is left).
    static let rateRange: ClosedRange<Double> = 0.000_1...1_000_000_000

    /// How lines are read: `--input`, text unless given.
    var lineFormat: LineFormat { input ?? .text }
    /// How many notifications to post without --lines.
    var notificationCount: Int { count ?? 1 }
    /// How many subscribers to wait for.
    var subscriberCount: Int { subscribers ?? 1 }
    /// Seconds to wait for them.
    var waitSeconds: Double { timeout ?? 10 }

    /// Checks everything that can be checked without connecting, so a bad argument fails at once
    /// (exit 64) instead of after the wait for subscribers.
    func validate() throws {
        if let retainFor {
            guard retain else { throw ValidationError("--retain-for needs --retain") }
            try SecondsOption.check(retainFor, "--retain-for", in: 0.001...SecondsOption.maximumTimeout)
        }
        let notificationName: NotificationName
        do { notificationName = try NotificationName(name) } catch { throw ValidationError("invalid name '\(displayed(name))': \(error)") }
        // Refused up front as a usage error (64), not by the bus at the first post (which exited 1).
        guard !ControlNames.isReserved(notificationName) else {
            throw ValidationError(
                "invalid name '\(displayed(name))': names whose first token is _nbus are the bus's own control messages (NBP-1 §15); use another first token")
        }
        if lines {
            if payload != nil {
                throw ValidationError("a PAYLOAD argument is not used with --lines: each line of standard input is a payload")
            }
            for (flag, given) in [("--count", count != nil), ("--rate", rate != nil), ("--size", size != nil)] where given {
                throw ValidationError("\(flag) is not used with --lines: standard input decides what is sent")
            }
        } else if input != nil {
            throw ValidationError("--input only applies with --lines (it says how to read each line of standard input)")
        }
        if noWait {
            if subscribers != nil { throw ValidationError("--subscribers is how many to wait for, but --no-wait does not wait") }
            if timeout != nil { throw ValidationError("--timeout is how long to wait for subscribers, but --no-wait does not wait") }
            // Measured: 6 of 6 such posts reached no broker (sent before the connection was up)
            // and nothing was kept, the summary saying only "unwanted 1".
            if retain {
                throw ValidationError(
                    "--retain with --no-wait sends before a broker that keeps values has subscribed, so nothing would be kept: drop --no-wait (a broker started with --retain-names counts as a subscriber of every name, so the wait ends as soon as it is connected)")
            }
        }
        if let count { guard count >= 1 else { throw ValidationError("--count must be at least 1") } }
        if let rate { try SecondsOption.check(rate, "--rate", in: Self.rateRange, unit: "notifications per second") }
        if let size {
            guard size >= 0 else { throw ValidationError("--size must be 0 or more") }
            guard size <= Self.maximumPayload else {
                throw ValidationError("--size \(size) is over the maximum payload of \(Self.maximumPayload) bytes")
            }
        }
        if !lines, size == nil {
            // The longest payload is the one whose {n} has the most digits: the last.
            let longest = payloadBytes(number: notificationCount).count
            guard longest <= Self.maximumPayload else {
                throw ValidationError("the payload is \(longest) bytes, over the maximum of \(Self.maximumPayload)")
            }
        }
        if let subscribers { guard subscribers >= 1 else { throw ValidationError("--subscribers must be at least 1 (use --no-wait to skip waiting)") } }
        if let timeout { try SecondsOption.check(timeout, "--timeout", in: 0.001...SecondsOption.maximumTimeout) }
        try SecondsOption.check(closeTimeout, "--close-timeout", in: 0...3_600)
        if let hwm, hwm < 0 { throw ValidationError("--hwm must be 0 (no limit) or more, not \(hwm)") }
        if let subscriberBudget {
            // Up to 1 TiB, as nbus broker: a budget is a bound on memory.
            guard (0...1_048_576).contains(subscriberBudget) else {
                throw ValidationError("--subscriber-budget must be 0 (none: --hwm messages) to 1048576 MiB, not \(subscriberBudget)")
            }
            guard !endpoints.bind.isEmpty else {
                throw ValidationError("--subscriber-budget applies to a publisher that binds (--bind): through a broker, the broker keeps it (nbus broker --subscriber-budget)")
            }
            guard hwm == nil else {
                throw ValidationError("--subscriber-budget and --hwm both set the mark per subscriber: give one of them")
            }
        }
        if let stallLimit, stallLimit != 0 {
            do { try SecondsOption.check(stallLimit, "--stall-limit", in: 0.001...86_400) } catch {
                throw ValidationError("--stall-limit must be 0 (no limit) or from 0.001 to 86400 seconds, got \(stallLimit)")
            }
        }
        let headerMap = try parsedHeaders()
        do {
            _ = try EnvelopeCodec.encodedSize(of: BusNotification(name: notificationName, headers: headerMap))
        } catch {
            throw ValidationError("--header: \(error)")
        }
        _ = try parsedContentType()
        try curve.validate(endpoints: endpoints, allowFlag: "--allow-subscribers", allowList: allowSubscribers)
    }

    /// The --header options; a key given twice is an error (a notification has one value per key).
    func parsedHeaders() throws -> NotificationHeaders {
        var result = NotificationHeaders()
        for header in headers {
            guard let equals = header.firstIndex(of: "="), equals != header.startIndex else {
                throw ValidationError("--header takes key=value, got '\(header)'")
            }
            let key = String(header[..<equals])
            let value = String(header[header.index(after: equals)...])
            if let earlier = result[key] {
                throw ValidationError(
                    "--header \(key) is given twice (\(key)=\(earlier) and \(key)=\(value)); a notification has one value per key")
            }
            result[key] = value
        }
        return result
    }

    /// A content type by name (`json`) or code (`2`), as --content-type and a JSON line's `contentType` take it.
    static func contentType(named text: String) -> ContentType? {
        ContentType(name: text)
    }

    func parsedContentType() throws -> ContentType {
        guard let type = Self.contentType(named: contentType) else { throw ValidationError("unknown --content-type '\(contentType)'") }
        return type
    }

    func payloadBytes(number: Int) -> [UInt8] {
        var text = (payload ?? "").replacingOccurrences(of: "{n}", with: String(number))
        if let size {
            if text.isEmpty { text = "x" }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(size)
            let source = Array(text.utf8)
            while bytes.count < size { bytes.append(source[bytes.count % source.count]) }
            return bytes
        }
        return Array(text.utf8)
    }

    func run() async throws {
        let notificationName = try NotificationName(name)
        let headerMap = try parsedHeaders()
        let type = try parsedContentType()
        logging.bootstrap()
        let exporter = tracing.start(command: "publish")
        // Ended before the summary (its last lines go above it), or here on a way out without one.
        LastWords.beforeSummary { await TracingOptions.finish(exporter, command: "publish") }
        try await LastWords.endingPreludes {
            try await CommandLifecycle.run(name: "publish") { () async throws -> (PublishService, [any Service]) in
                var configuration = BusConfiguration(publish: endpoints.attachments(defaultConnect: DefaultEndpoints.frontend))
                if let hwm { configuration.sendHighWaterMark = hwm }
                if let subscriberBudget { configuration.subscriberBudget = subscriberBudget << 20 }
                if noBatch { configuration.batching = .off }
                configuration.closeTimeout = .milliseconds(SecondsOption.milliseconds(closeTimeout))
                if let stallLimit { configuration.sendStallLimit = SecondsOption.duration(stallLimit) }
                configuration.logger = CommandLog.logger("publish")  // the bus's own lines, at --log-level debug
                let bus: Bus
                do {
                    try curve.apply(to: &configuration, allowList: allowSubscribers, command: "publish")
                    bus = try Bus(configuration)
                } catch {
                    throw fail("publish", naming(error, options: [("--bind", endpoints.bind)]), code: 2)
                }
                let helpers = try monitoring.services(bus: bus, subscriptions: [], command: "publish").services
                return (PublishService(command: self, bus: bus, name: notificationName, headers: headerMap, contentType: type), helpers)
            }
        }
    }

    /// Waits for the subscribers (unless --no-wait), then posts `count` notifications (paced by
    /// `rate`) or the lines of standard input; stops early, without an error, when a graceful
    /// shutdown cancels it. Returns the skipped input lines; throws `SubscribersMissing` when the
    /// wait failed.
    func post(_ bus: Bus, _ name: NotificationName, _ headers: NotificationHeaders, _ type: ContentType) async throws -> Int {
        var source: any PublishSource =
            switch (lines, lineFormat) {
            case (true, .json): JSONLineSource(defaultName: name, headers: headers, type: type, maximumLineBytes: Self.maximumJSONLineBytes)
            case (true, _): TextLineSource(name: name, headers: headers, type: type, maximumPayload: Self.maximumPayload)
            case (false, _): CountedSource(name: name, count: notificationCount, headers: headers, type: type, payload: payloadBytes(number:))
            }
        return try await post(bus, from: &source)
    }

    /// The one posting loop: waits for the subscribers (of `waitName`, or of the first post's
    /// name), paces counted posts at `rate`, skips and counts what one notification alone makes
    /// unpostable, and stops early, without an error, when a graceful shutdown cancels it.
    /// Returns the skipped input lines.
    private func post(_ bus: Bus, from source: inout any PublishSource) async throws -> Int {
        var skipped = 0
        var waited = false
        if let waitName = source.waitName {
            waited = true
            guard try await awaitSubscribers(bus, waitName) else { return 0 }
        }
        let clock = ContinuousClock()
        // Each post is due one interval after the previous one's due time (not after the post), so
        // the rate holds on average; `validate()` bounds the rate (counted posts only), so the
        // interval converts safely.
        let interval = rate.map { SecondsOption.duration(1 / $0) }
        var due = clock.now
        var posted = 0
        var items = 0
        while let item = try await source.next() {
            // A post that finds room (or that nobody wants) never suspends, so the graceful
            // shutdown's cancellation is looked for here, and the loop lets other tasks run now
            // and then: an unpaced loop used to ignore the first SIGTERM.
            if Task.isCancelled { return skipped }
            items += 1
            if items % 4_096 == 0 { await Task.yield() }
            switch item {
            case .skip(let line, let reason):
                skip(line, reason, &skipped)
            case .post(let line, let name, let payload, let itemHeaders, let itemType, let itemRetain):
                if !waited {
                    waited = true
                    guard try await awaitSubscribers(bus, name) else { return skipped }
                }
                if let interval {
                    if posted > 0 { due += interval }
                    do {
                        try await Task.sleep(until: due, clock: clock)
                    } catch {
                        return skipped
                    }
                }
                do {
                    guard try await postUnlessCancelled(bus, name, payload, itemHeaders, itemType, retain: retain || itemRetain) else {
                        return skipped
                    }
                    posted += 1
                } catch {
                    guard let line, Self.isPerNotification(error) else { throw error }
                    skip(line, "\(error)", &skipped)
                }
            }
        }
        return skipped
    }

    /// Posts one notification; false when the wait for room in the outbound queue was cancelled.
    private func postUnlessCancelled(
        _ bus: Bus, _ name: NotificationName, _ payload: [UInt8], _ headers: NotificationHeaders, _ type: ContentType,
        retain: Bool
    ) async throws(BusError) -> Bool {
        do {
            try await bus.post(
                name: name, payload: payload, headers: headers, contentType: type, retain: retain,
                retainFor: retainFor.map { .nanoseconds(Int64(($0 * 1e9).rounded())) })
            return true
        } catch {
            if case .cancelled = error { return false }
            throw error
        }
    }

    /// Whether a post failed because of this one notification (it is skipped) rather than the bus.
    private static func isPerNotification(_ error: BusError) -> Bool {
        switch error.code {
        case .payloadTooLarge, .invalidHeaders, .invalidName, .reservedName: return true
        default: return false
        }
    }

    /// How the wait for subscribers ended (`PublishOutcome` decides what each means).
    typealias WaitOutcome = PublishOutcome.Wait

    /// Whether some --connect endpoint may have a listener: an ipc one whose socket file exists,
    /// or any tcp one (only a connection attempt would tell). Without one there is no handshake
    /// to wait for.
    var connectsToSomethingThere: Bool {
        guard endpoints.bind.isEmpty else { return false }
        let connects = endpoints.connect.isEmpty ? [DefaultEndpoints.frontend] : endpoints.connect
        return connects.contains { endpoint in
            guard endpoint.lowercased().hasPrefix("ipc://") else { return true }
            let path = String(endpoint.dropFirst("ipc://".count))
            return path.hasPrefix("@") || FileManager.default.fileExists(atPath: path)
        }
    }

    /// Whether this publisher only connects and nothing answered at any endpoint: no connection
    /// is up and no handshake was even tried (no broker running there), rather than a broker
    /// without subscribers or a refused handshake.
    func reachedNothing(_ bus: Bus) -> Bool {
        let stats = bus.stats
        return endpoints.bind.isEmpty && stats.connectedEndpoints == 0 && stats.handshakesFailed + stats.handshakesRefused == 0
    }

    /// Why the publisher did not start: the wait for subscribers of `name` ended with `outcome`.
    struct SubscribersMissing: Error {
        let outcome: WaitOutcome
        let name: NotificationName
    }

    /// Waits (unless --no-wait) for the subscribers of `name`; false when a graceful shutdown ended
    /// the wait, `SubscribersMissing` when they did not come.
    func awaitSubscribers(_ bus: Bus, _ name: NotificationName) async throws -> Bool {
        guard !noWait else { return true }
        var outcome = await waitForSubscribers(bus, name)
        if Task.isShuttingDownGracefully { return false }
        if outcome == .timedOut(arrived: 0) && reachedNothing(bus) { outcome = .nothingAnswered }
        guard outcome == .ready else { throw SubscribersMissing(outcome: outcome, name: name) }
        return true
    }

    /// Waits for `count` subscribers (default: --subscribers) within `limit` (default: --timeout),
    /// or for the server to refuse this publisher (an unlisted CURVE key, or CURVE on one side
    /// only), whichever comes first.
    /// Waits for one subscriber more at a time, so a timeout can say how many had arrived.
    func waitForSubscribers(
        _ bus: Bus, _ name: NotificationName, count: Int? = nil, within limit: Duration? = nil
    ) async -> WaitOutcome {
        let limit = limit ?? SecondsOption.duration(waitSeconds)
        let count = count ?? subscriberCount
        return await withTaskGroup(of: WaitOutcome.self) { group in
            group.addTask {
                let clock = ContinuousClock()
                let deadline = clock.now + limit
                for wanted in 1...count {
                    let left = deadline - clock.now
                    do {
                        guard left > .zero else { throw BusError.timedOut(what: "subscribers", after: .zero) }
                        try await bus.waitForSubscribers(count: wanted, matching: name, timeout: left)
                    } catch {
                        return .timedOut(arrived: wanted - 1)
                    }
                }
                return .ready
            }
            // A refused key, or a server with another security mechanism (CURVE against plaintext).
            // The wait throws when no refusal came within the limit or the bus closed: both are
            // "no refusal", the outcome this task stands for.
            group.addTask { (try? await bus.waitForHandshakeRefusal(timeout: limit)) != nil ? .refused : .noRefusal }
            var outcome = WaitOutcome.timedOut(arrived: 0)
            while let next = await group.next() {
                if next == .noRefusal { continue }
                outcome = next
                break
            }
            group.cancelAll()
            return outcome
        }
    }

    /// How the summary is written: `--format`, else JSON when the log is JSON.
    var summaryFormat: CommandSummary.Format { CommandSummary.format(output: format, log: logging.logFormat) }

    /// What `PublishOutcome` needs of the options.
    var outcomeOptions: PublishOutcome.Options {
        var options = PublishOutcome.Options()
        options.readsLines = lines
        options.subscriberCount = subscriberCount
        options.waitSeconds = waitSeconds
        options.closeTimeout = closeTimeout
        options.connectEndpoints = endpoints.connect.isEmpty && endpoints.bind.isEmpty ? [DefaultEndpoints.frontend] : endpoints.connect
        options.curveSecret = curve.curveSecret
        return options
    }

    /// The longest JSON line read: room for a payload of the maximum size written as JSON escapes.
    static let maximumJSONLineBytes = 6 * maximumPayload + 65_536

    private func skip(_ lineNumber: Int, _ reason: String, _ skipped: inout Int) {
        logLine(.warning, "publish", "line \(lineNumber): \(reason), skipped")
        skipped += 1
    }
}
