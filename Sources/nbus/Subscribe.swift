import ArgumentParser
import BusOperations
import Foundation
import Logging
import NotificationBus
import ServiceLifecycle
import Synchronization
import ToolSupport

struct Subscribe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the notifications whose names match PATTERN..., then a loss summary.",
        discussion: """
            Example (broker running): nbus subscribe 'orders.>' --count 3
            Exit status, details: docs/command-line.md (share/doc/nbus/ when installed).
            """)

    /// The patterns as parsed: joined into one value before parsing (`joiningPatterns`), so that
    /// 10,000 of them parse in linear time; `patterns` splits them.
    @Argument(help: ArgumentHelp("One or more patterns.", valueName: "pattern"))
    var patternArguments: [String]

    /// Every pattern, in command-line order.
    var patterns: [String] { PositionalJoin.split(patternArguments) }

    /// `arguments` (without the program's name) with `subscribe`'s patterns joined into one
    /// argument (`PositionalJoin`); other commands' arguments as they are.
    static func joiningPatterns(_ arguments: [String]) -> [String] {
        guard arguments.first == "subscribe" else { return arguments }
        return [arguments[0]] + PositionalJoin.join(Array(arguments.dropFirst()), flags: flags)
    }

    /// The options that take no value (PositionalJoin's rule: every other option takes one; a flag
    /// missing here only makes the join less complete, never wrong). OperationsTests compares it
    /// with what `--experimental-dump-help` lists.
    static let flags: Set<String> = ["--stats", "-h", "--help"]

    @Option(name: .shortAndLong, parsing: .unconditional, help: "Stop after this many notifications (over all patterns).")
    var count: Int?

    @Option(help: ArgumentHelp(
        "Notifications on stdout and the summary on stderr as text (default) or json (one object per line).",
        valueName: "format"))
    var format: Format?

    @Option(help: ArgumentHelp(
        "Print only the payloads that decode: json (content type json or unspecified, and a JSON text) or auto (by content type: json must be JSON, text UTF-8); the others are counted per pattern (summary's undecodable, /metrics) and logged, not printed.",
        valueName: "coding"))
    var decode: PayloadDecoding?

    @Flag(help: "Print per-subscription and bus counters in the summary.")
    var stats = false

    @OptionGroup var endpoints: EndpointOptions

    @Option(parsing: .unconditional, help: ArgumentHelp("Give up after this many seconds (exit 1 if --count was not reached).", valueName: "seconds"))
    var timeout: Double?

    @Option(
        name: .customLong("connect-timeout"), parsing: .unconditional,
        help: ArgumentHelp(
            "Without --bind: seconds to wait for a broker (or peer) to answer at some --connect endpoint; with none by then, exit 2 saying so (default: 10; 0: wait for ever, e.g. a service started before its broker).",
            valueName: "seconds"))
    var connectTimeout: Double = 10

    @Option(parsing: .unconditional, help: ArgumentHelp("Buffered notifications per pattern before the policy applies.", valueName: "n"))
    var buffer: Int = 8192

    @Option(name: .customLong("buffer-mib"), parsing: .unconditional, help: ArgumentHelp(
        "MiB of notifications buffered per pattern before the policy applies, as well as --buffer (payload, headers and name, plus 64 bytes each; one larger notification still passes alone; 0: no byte bound).",
        valueName: "MiB"))
    var bufferMiB: Int = BusConfiguration.defaultSubscriptionBufferBytes >> 20

    @Option(help: ArgumentHelp("When the buffer is full: suspend (back-pressure), drop-oldest or drop-newest.", valueName: "policy"))
    var policy: Policy = .suspend

    @Option(parsing: .unconditional, help: ArgumentHelp("Largest payload accepted, in bytes (default NBP/1's 1048576; up to 1073741824, for publishers configured alike).", valueName: "bytes"))
    var maxPayload: Int = WireFormat.defaultMaximumPayload

    @Option(name: .customLong("max-memory"), parsing: .unconditional, help: ArgumentHelp(
        "With --bind: resident memory (MiB) past which every connection is dropped, so no peer can grow this process without bound (64 or more; 0: no limit).",
        valueName: "MiB"))
    var maxMemory: Int = 4_096

    @Option(parsing: .unconditional, help: ArgumentHelp(
        "Most headers accepted per notification (0-32). NBP/1's other limits: names 255 bytes, header maps 4096 bytes, keys 64 bytes, values 1024 bytes; a message beyond any is dropped and counted by reason.",
        valueName: "n"))
    var maxHeaders: Int = WireFormat.maximumHeaderCount

    @OptionGroup var curve: CurveOptions

    @OptionGroup var monitoring: BusHTTPOptions

    @OptionGroup var logging: LoggingOptions

    @OptionGroup var tracing: TracingOptions

    @Flag(help: "Start each pattern with the current (retained) values of the names it matches, from a broker that keeps them (nbus broker --retain-names), each marked retained, then the live notifications.")
    var retained = false

    @Flag(name: .customLong("retained-only"), help: "Print the current state and exit: the retained values of the names each pattern matches (and any live notification that arrived meanwhile, newer), then stop (exit 0; nothing when no broker keeps values).")
    var retainedOnly = false

    @Option(
        help: ArgumentHelp(
            "With --bind and --curve-secret: the folder of publisher public keys (*.pub) to admit.",
            valueName: "folder"))
    var allowPublishers: String?

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    enum Policy: String, ExpressibleByArgument, CaseIterable {
        case suspend, dropOldest = "drop-oldest", dropNewest = "drop-newest"
    }

    func validate() throws {
        guard !patterns.isEmpty else { throw ValidationError("give at least one pattern") }
        for pattern in patterns {
            do { _ = try NamePattern(pattern) } catch { throw ValidationError("invalid pattern '\(displayed(pattern))': \(error)") }
            // It would subscribe and wait for ever: a receiver never hands control messages on.
            guard !ControlNames.isReserved(nameBytes: Array(pattern.utf8)) else {
                throw ValidationError(
                    "invalid pattern '\(displayed(pattern))': names whose first token is _nbus are the bus's own control messages (NBP-1 §15), never delivered to a subscriber")
            }
        }
        if let count { guard count >= 1 else { throw ValidationError("--count must be at least 1") } }
        if let timeout { try SecondsOption.check(timeout, "--timeout", in: 0.001...SecondsOption.maximumTimeout) }
        if connectTimeout != 0 {
            do { try SecondsOption.check(connectTimeout, "--connect-timeout", in: 0.001...SecondsOption.maximumTimeout) } catch {
                throw ValidationError("--connect-timeout must be 0 (wait for ever) or from 0.001 to \(Int(SecondsOption.maximumTimeout)) seconds, got \(connectTimeout)")
            }
        }
        guard buffer >= 1 else { throw ValidationError("--buffer must be at least 1") }
        guard (0...(1 << 20)).contains(bufferMiB) else {
            throw ValidationError("--buffer-mib must be 0 (no byte bound) to 1048576 MiB (default 64), not \(bufferMiB)")
        }
        // Above NBP/1's 1 MiB default only for publishers configured alike (NBP-1 §6); past 1 GiB a
        // single peer's frame would be the process's memory.
        guard (0...(1 << 30)).contains(maxPayload) else {
            throw ValidationError("--max-payload must be 0 to 1073741824 bytes (default 1048576, NBP/1's), not \(maxPayload)")
        }
        // Below 64 MiB the process itself (some 30 MiB idle) would pass the limit and reset every connection, over and over.
        guard maxMemory == 0 || (64...(1 << 30)).contains(maxMemory) else {
            throw ValidationError("--max-memory must be 0 (no limit) or 64 to 1073741824 MiB (the process alone takes some 30), not \(maxMemory)")
        }
        guard (0...WireFormat.maximumHeaderCount).contains(maxHeaders) else {
            throw ValidationError("--max-headers must be 0 to \(WireFormat.maximumHeaderCount) (NBP/1's limit)")
        }
        try curve.validate(endpoints: endpoints, allowFlag: "--allow-publishers", allowList: allowPublishers)
    }

    func run() async throws {
        logging.bootstrap()
        let exporter = tracing.start(command: "subscribe")
        // Ended before the summary (its last lines go above it), or here on a way out without one.
        LastWords.beforeSummary { await TracingOptions.finish(exporter, command: "subscribe") }
        try await LastWords.endingPreludes {
            try await CommandLifecycle.run(name: "subscribe") { () async throws -> (SubscribeService, [any Service]) in
                var configuration = BusConfiguration(subscribe: endpoints.attachments(defaultConnect: DefaultEndpoints.backend))
                configuration.maximumPayload = maxPayload
                configuration.subscriptionBufferBytes = bufferMiB << 20
                configuration.maximumResidentMemory = maxMemory == 0 ? nil : UInt64(maxMemory) << 20
                configuration.maximumHeaderCount = maxHeaders
                configuration.logger = CommandLog.logger("subscribe")  // the bus's own lines, at --log-level debug
                let bus: Bus
                let streams: [BusEventSequence]
                let buffering: BufferingPolicy
                switch policy {
                case .suspend: buffering = .suspendProducer(capacity: buffer)
                case .dropOldest: buffering = .dropOldest(capacity: buffer)
                case .dropNewest: buffering = .dropNewest(capacity: buffer)
                }
                do {
                    try curve.apply(to: &configuration, allowList: allowPublishers, command: "subscribe")
                    bus = try Bus(configuration)
                    streams = try patterns.map { pattern in
                        retainedOnly
                            ? try bus.currentState(named: try NamePattern(pattern), buffering: buffering)
                            : try bus.events(named: try NamePattern(pattern), buffering: buffering, retained: retained)
                    }
                } catch {
                    throw fail("subscribe", naming(error, options: [("--bind", endpoints.bind)]), code: 2)
                }
                let undecodable = UndecodableCounts(patterns: patterns)
                let (helpers, latency) = try monitoring.services(
                    bus: bus,
                    subscriptions: zip(patterns, streams).enumerated().map { index, subscription in
                        (subscription.0, { undecodable.adding(to: subscription.1.stats, pattern: index) })
                    },
                    command: "subscribe", measuresDelivery: true)
                return (SubscribeService(command: self, bus: bus, streams: streams, latency: latency, undecodable: undecodable), helpers)
            }
        }
    }

    /// Prints every event of `streams` until they end or `count` notifications were printed;
    /// returns whether the count was reached. A notification (or an upstream gap) whose name
    /// several patterns match reaches each of their subscriptions; it is printed once, from the
    /// first of them in command-line order. With `--decode`, a notification that does not decode
    /// is counted in `undecodable` (for that first pattern) instead of printed.
    func printEvents(of streams: [BusEventSequence], printing printer: EventPrinter, undecodable: UndecodableCounts) async -> Bool {
        let decode = self.decode
        let patterns = streams.map(\.pattern)
        return await withTaskGroup(of: Bool.self) { group in
            for (index, stream) in streams.enumerated() {
                // A slice of the one array, not a copy per pattern (10,000 patterns made 50
                // million copies at start).
                let earlier = patterns[..<index]
                group.addTask {
                    for await event in stream {
                        if let name = event.streamName, earlier.contains(where: { $0.matches(name) }) { continue }
                        if let decode, case .notification(let notification) = event, let reason = decode.failure(notification) {
                            undecodable.note(notification, pattern: index, reason: reason)
                            continue
                        }
                        if printer.print(event) { return true }
                    }
                    return false
                }
            }
            for await reachedCount in group where reachedCount {
                group.cancelAll()
                return true
            }
            return false
        }
    }

    /// Whether this subscriber has a memory guard to report on: it binds, with --max-memory.
    var watchesMemory: Bool { !endpoints.bind.isEmpty && maxMemory > 0 }

    /// Logs each memory-guard reset of `bus` as it happens (a warning), until cancelled. The bus
    /// counts them (`BusStats.memoryLimitResets`) but logs nothing itself, so its counter is
    /// looked at four times a second.
    func logMemoryResets(of bus: Bus) async {
        var seen: UInt64 = 0
        while !Task.isCancelled {
            do { try await Task.sleep(for: .milliseconds(250)) } catch { return }
            let resets = bus.stats.memoryLimitResets
            guard resets > seen else { continue }
            seen = resets
            let text =
                "memory passed --max-memory \(maxMemory) MiB: dropped every connection of \(endpoints.bind.joined(separator: ", ")) "
                + "(a peer holding memory, e.g. a message it never finishes); publishers reconnect, what was in flight is "
                + "lost and counted as gaps; \(resets) reset(s) so far"
            CommandLog.logger("subscribe").warning("\(text)", metadata: ["memoryLimitResets": "\(resets)"])
        }
    }

    /// How the summary is written: `--format`, else JSON when the log is JSON.
    var summaryFormat: CommandSummary.Format {
        CommandSummary.format(output: format.map { $0 == .json ? .json : .text }, log: logging.logFormat)
    }

    /// What `SubscribeOutcome` needs of the options.
    var outcomeOptions: SubscribeOutcome.Options {
        var options = SubscribeOutcome.Options()
        (options.count, options.timeout, options.showsStats) = (count, timeout, stats)
        options.decodes = decode != nil
        (options.maxMemory, options.curveSecret) = (maxMemory, curve.curveSecret)
        options.connectEndpoints = endpoints.connect.isEmpty ? [DefaultEndpoints.backend] : endpoints.connect
        options.connectWait = min(connectTimeout, timeout ?? connectTimeout)
        return options
    }

    /// How long to wait for the first connection before saying no broker answered: nil when this
    /// subscriber binds (others come to it) or with --connect-timeout 0; else --connect-timeout,
    /// or --timeout when that is sooner.
    var connectWait: Duration? {
        guard endpoints.bind.isEmpty, connectTimeout > 0 else { return nil }
        return SecondsOption.duration(min(connectTimeout, timeout ?? connectTimeout))
    }

    /// Waits up to `limit` for `bus` to have a connection up, a handshake tried (a refusal is
    /// the refusal watch's to report), or anything received (a connection that answered once and
    /// is down now, a publisher that cut off this subscriber under load, is not "no broker"):
    /// false when nothing answered at all. The bus signals no connection made, so its counters
    /// are looked at every 20 ms.
    static func somethingAnswers(_ bus: Bus, within limit: Duration) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while true {
            let stats = bus.stats
            if stats.connectedEndpoints > 0 || stats.handshakesFailed + stats.handshakesRefused > 0
                || stats.framesReceived > 0
            {
                return true
            }
            guard clock.now < deadline else { return false }
            // Cancelled: the subscriber is ending for another reason; not "nothing answered".
            do { try await Task.sleep(for: .milliseconds(20)) } catch { return true }
        }
    }
}

extension BusEvent {
    /// The name of the (publisher, name) stream this event belongs to: a notification's name, an
    /// upstream gap's; nil for a local drop (which is this subscription's own).
    var streamName: NotificationName? {
        switch self {
        case .notification(let notification): notification.name
        case .gap(let gap): gap.name
        }
    }
}
