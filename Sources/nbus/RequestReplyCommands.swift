import ArgumentParser
import BusOperations
import Foundation
import Logging
import ServiceLifecycle
import ToolSupport
import NotificationBus
import Subprocess
import SystemPackage
import Synchronization

/// Where `request` and `reply` reach a broker: both sides at once.
struct BrokerEndpointOptions: ParsableArguments {
    @Option(
        name: .customLong("frontend"),
        help: ArgumentHelp(
            "The broker's frontend, where publishers connect (default \(DefaultEndpoints.frontend)). Repeatable, with --backend: several brokers, no single point of failure.",
            valueName: "endpoint"))
    var frontends: [String] = []

    @Option(
        name: .customLong("backend"),
        help: ArgumentHelp(
            "The broker's backend, where subscribers connect (default \(DefaultEndpoints.backend)). Repeatable, with --frontend.",
            valueName: "endpoint"))
    var backends: [String] = []

    /// The frontends given, or the default one, for messages.
    var frontend: String { (frontends.isEmpty ? [DefaultEndpoints.frontend] : frontends).joined(separator: ", ") }
    /// The backends given, or the default one, for messages.
    var backend: String { (backends.isEmpty ? [DefaultEndpoints.backend] : backends).joined(separator: ", ") }

    /// A CURVE client of the broker, like publish and subscribe with --connect.
    @OptionGroup var curve: CurveOptions

    func validate() throws {
        for endpoint in frontends { try validateEndpoint(endpoint, option: "--frontend", connecting: true) }
        for endpoint in backends { try validateEndpoint(endpoint, option: "--backend", connecting: true) }
        if frontends.count != backends.count && !frontends.isEmpty && !backends.isEmpty {
            throw ValidationError("--frontend and --backend name one broker each: give as many of one as of the other")
        }
        switch (curve.curveSecret, curve.curveServerKey) {
        case (nil, nil), (.some, .some): break
        case (nil, .some): throw ValidationError("--curve-server-key needs --curve-secret too")
        case (.some, nil): throw ValidationError("--curve-secret needs --curve-server-key (the broker's .pub file)")
        }
    }

    /// The bus of `command`, its own lines (connections, handshakes, rejections) at --log-level
    /// debug, with the CURVE keys loaded when given.
    func configuration(_ command: String) throws -> BusConfiguration {
        var configuration = BusConfiguration.brokered(
            frontends: frontends.isEmpty ? [DefaultEndpoints.frontend] : frontends,
            backends: backends.isEmpty ? [DefaultEndpoints.backend] : backends)
        configuration.logger = CommandLog.logger(command)
        try curve.apply(to: &configuration, allowList: nil, command: command)
        return configuration
    }
}

struct Request: AsyncParsableCommand {
    /// The most `-` reads from standard input: the bus's default maximum payload.
    static let standardInputLimit = 1 << 20

    /// Standard input to its end, on a thread of its own; a usage error past `limit` bytes.
    static func readStandardInput(limit: Int) async throws -> [UInt8] {
        let read = OneShot<Result<[UInt8], ValidationError>>()
        Thread.detachNewThread {
            var input = FileDescriptorBytes(fileDescriptor: STDIN_FILENO)
            read.finish(
                input.readToEnd(limit: limit).mapError { failure in
                    switch failure {
                    case .tooLong: ValidationError("the payload on standard input is over \(limit) bytes")
                    case .readFailed(let reason): ValidationError("reading standard input: \(reason)")
                    }
                })
        }
        return try await read.valueIgnoringCancellation().get()
    }

    static let configuration = CommandConfiguration(
        abstract: "Send one request to NAME through a broker and print the reply.",
        discussion: """
            The request is a notification with a reply-to header (NBP-1 §16); a responder \
            (`nbus reply`, a Bus.respond handler, or any NBP/1 producer that follows §16) posts \
            the reply there. The reply's payload is written to standard output as it came.

            Before it posts, it waits until the broker has its reply subscription. "No \
            responders" is said once this process has every subscription the broker holds and \
            none is to NAME: within a few round trips to the broker, not after a guess.

            Exit status: 0 a reply, 1 no reply within --timeout, 2 no responders (nothing \
            subscribes to NAME at the broker), no broker reached within --timeout, a key the broker \
            refused, or an unusable endpoint, 3 the responder replied with status error (its reason \
            on standard error), 64 bad arguments. Errors are log lines (--log-level, --log-format).
            """)

    @Argument(help: "The request's name, e.g. math.double.")
    var name: String

    /// How long a requester that reached no broker looks for a refusal of its handshakes.
    static let refusalGrace = Duration.seconds(2)

    @Argument(help: "The payload text (default: empty); - reads it from standard input, to its end (up to 1 MiB).")
    var payload: String = ""

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds to wait for the reply.", valueName: "seconds"))
    var timeout: Double = 5

    @Option(name: .customLong("header"), help: ArgumentHelp("A header key=value. Repeatable.", valueName: "key=value"))
    var headers: [String] = []

    @OptionGroup var endpoints: BrokerEndpointOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        try SecondsOption.check(timeout, "--timeout", in: 0.001...SecondsOption.maximumTimeout)
    }

    func run() async throws {
        logging.bootstrap()
        let requestName: NotificationName
        do { requestName = try NotificationName(name) } catch { throw ValidationError("invalid name '\(displayed(name))': \(error)") }
        var headerMap = NotificationHeaders()
        for header in headers {
            guard let equals = header.firstIndex(of: "="), equals != header.startIndex else {
                throw ValidationError("--header \(header): expected key=value")
            }
            headerMap[String(header[..<equals])] = String(header[header.index(after: equals)...])
        }
        let payloadBytes: [UInt8]
        if payload == "-" {
            // Read before the bus opens: the wait for a slow writer is not the reply's timeout.
            payloadBytes = try await Self.readStandardInput(limit: Self.standardInputLimit)
        } else {
            payloadBytes = Array(payload.utf8)
        }
        let bus: Bus
        do { bus = try Bus(try endpoints.configuration("request")) } catch { throw fail("request", error, code: 2) }
        let outcome: Result<BusNotification, BusError>
        do {
            outcome = .success(
                try await bus.request(requestName, payload: payloadBytes, headers: headerMap, timeout: SecondsOption.duration(timeout)))
        } catch {
            outcome = .failure(error)
        }
        // Whether both sides reached the broker: "no responders" then means nobody answers, not
        // that the broker is unreachable. When they did not, whether the broker refused this
        // requester (its key, or CURVE on one side only) rather than not being there: a refusal
        // comes within a handshake's round trips, so it is waited for a moment.
        var verdict: HandshakeVerdict = bus.stats.connectedEndpoints >= 2 ? .connected : .nothingThere
        if case .failure = outcome, verdict != .connected {
            verdict = await HandshakeVerdict.of(bus, connections: 2, within: Self.refusalGrace)
        }
        let stats = await bus.close()
        var options = RequestOutcome.Options()
        (options.frontend, options.backend, options.timeout) = (endpoints.frontend, endpoints.backend, timeout)
        options.curveSecret = endpoints.curve.curveSecret
        let ending = RequestOutcome.of(outcome, name: requestName, verdict: verdict, stats: stats, options: options)
        if !ending.standardOutput.isEmpty { FileHandle.standardOutput.write(Data(ending.standardOutput)) }
        try finish("request", ending, format: .text)
    }
}

struct ReplyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reply",
        abstract: "Answer requests matching PATTERN through a broker, until SIGINT or SIGTERM.",
        discussion: """
            --echo answers each request with its own payload. --command runs CMD with /bin/sh -c \
            for each request (one at a time): the request's payload on its standard input, the \
            reply from its standard output (at most 1 MiB); the request's name in NBUS_NAME and \
            each header in NBUS_HEADER_<KEY> (upper case, - and . as _). A command that exits \
            non-zero is answered with status error and its standard error as the reason. \
            Requests without a reply-to header are ignored. Each reply is posted once the \
            requester's subscription to its reply name has reached this responder (at most 5 s: \
            a requester gone by then gets none). Logs one line per request on standard error \
            (--log-level, --log-format), and on SIGINT, SIGTERM or --count a summary: requests \
            received, replied (ok, error), not sent, ignored, unanswered.

            Exit status: 0 stopped by a signal or after --count, 2 an unusable endpoint or --http \
            address, or a key the broker refused (or CURVE on one side only), 64 bad arguments.
            """)

    @Argument(help: "The requests to answer: exact `math.double`, one token `math.*`, the rest `math.>`.")
    var pattern: String

    @Flag(help: "Reply with the request's own payload.")
    var echo = false

    @Option(help: ArgumentHelp("Reply with this shell command's output.", valueName: "CMD"))
    var command: String?

    @Option(
        name: .customLong("command-timeout"), parsing: .unconditional,
        help: ArgumentHelp(
            "Stop a --command that runs longer than this (it is killed and the request answered with status error); requests are answered one at a time.",
            valueName: "seconds"))
    var commandTimeout: Double = 30

    @Option(parsing: .unconditional, help: "Stop after answering this many requests (default: never).")
    var count: Int?

    @OptionGroup var endpoints: BrokerEndpointOptions

    @OptionGroup var monitoring: BusHTTPOptions

    @Option(help: ArgumentHelp(
        "The summary on stderr when it stops: text (one line) or json (one object; the default with --log-format json).",
        valueName: "format"))
    var format: CommandSummary.Format?

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard echo != (command != nil) else { throw ValidationError("give exactly one of --echo and --command") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        try SecondsOption.check(commandTimeout, "--command-timeout", in: 0.001...SecondsOption.maximumTimeout)
    }

    func run() async throws {
        logging.bootstrap()
        let requestPattern: NamePattern
        do { requestPattern = try NamePattern(pattern) } catch { throw ValidationError("invalid pattern '\(displayed(pattern))': \(error)") }
        try await CommandLifecycle.run(name: "reply") { () async throws -> (ReplyService, [any Service]) in
            let bus: Bus
            let requests: NotificationSequence
            do {
                bus = try Bus(try endpoints.configuration("reply"))
                requests = try bus.notifications(named: requestPattern)
            } catch {
                throw fail("reply", error, code: 2)
            }
            let helpers = try monitoring.services(
                bus: bus, subscriptions: [(requestPattern.description, { @Sendable in requests.stats })], command: "reply").services
            return (ReplyService(command: self, bus: bus, pattern: requestPattern, requests: requests), helpers)
        }
    }
}

/// `nbus reply` as the service of its group: answers until SIGINT/SIGTERM (the group's graceful
/// shutdown) or `--count`, then closes its bus and logs its summary.
struct ReplyService: Service {
    let command: ReplyCommand
    let bus: Bus
    let pattern: NamePattern
    let requests: NotificationSequence

    func run() async throws {
        let (bus, requests, requestPattern, endpoints) = (self.bus, self.requests, pattern, command.endpoints)
        let tally = ReplyTally(limit: command.count)
        let shellCommand = command.command
        let commandTimeout = SecondsOption.duration(command.commandTimeout)
        // Requests are taken one at a time (a command runs alone), in a task of its own that
        // shutdown cancels and then awaits: a command still running is stopped then (Subprocess's
        // teardown of its session) before this process exits, instead of being left behind.
        // Replies are posted side by side: each waits for its requester's subscription to reach
        // this publisher (`Bus.reply`), and a requester that left holds up no other's reply.
        // Counted once posted (or given up), so --count never closes the bus before its last reply.
        let handling = Task {
            await withTaskGroup(of: Void.self) { replies in
                var posting = 0
                for await request in requests {
                    guard RequestReply.replyName(of: request) != nil else {
                        tally.ignored()
                        logLine(.warning, "reply", "\(request.name): ignored, no valid reply-to header")
                        continue
                    }
                    let reply =
                        if let shellCommand {
                            await ReplyCommand.run(shellCommand, for: request, timeout: commandTimeout)
                        } else {
                            Reply(payload: request.payload)
                        }
                    if posting >= ReplyTally.concurrentReplies, await replies.next() != nil { posting -= 1 }
                    posting += 1
                    replies.addTask {
                        do {
                            // Shielded from shutdown's cancellation: a reply taken is sent, the
                            // "responder is stopping" one of a command cut short included (its
                            // wait for the requester is bounded by `Bus.requesterWait`).
                            try await Task.detached { try await bus.reply(to: request, with: reply) }.value
                            tally.replied(isError: reply.isError)
                            logLine(.info, "reply", "\(request.name): \(reply.isError ? "error" : "ok"), \(reply.payload.count) bytes")
                        } catch {
                            tally.notSent()
                            logLine(.warning, "reply", "\(request.name): the reply was not sent: \(error)")
                        }
                    }
                }
            }
        }
        // "answering" means requests can reach us: the subscription is live at the broker. A
        // broker that refuses this responder (its key, or CURVE on one side only) never confirms
        // it: that is watched for as long as the responder runs, and ends it (exit 2) rather
        // than leave it waiting for ever.
        enum Ending: Sendable { case confirmed, unconfirmed, stopped, refused }
        // Bounded by a year: for as long as the responder runs. A refusal already seen is
        // reported at once, so each group below has its own wait.
        // A throw (no refusal within the wait, or the bus closed) is no refusal: nil, and the
        // other ending wins.
        @Sendable func refusal() async -> Ending? {
            (try? await bus.waitForHandshakeRefusal(timeout: .seconds(365 * 86_400))) != nil ? .refused : nil
        }
        let first = await firstResult(
            of: [
                { () async -> Ending? in
                    do {
                        try await bus.ready(requestPattern, timeout: .seconds(10))
                        return .confirmed
                    } catch {
                        return Task.isCancelled ? nil : .unconfirmed
                    }
                },
                refusal,
            ], otherwise: Ending.unconfirmed)
        var ending = first
        if ending != .refused {
            if ending == .unconfirmed {
                logLine(
                    .warning, "reply",
                    "no broker confirmed the subscription at \(endpoints.backend) within 10 s (is `nbus broker` running?); answering once one does")
            }
            logLine(.info, "reply", "answering \(requestPattern) (frontend \(endpoints.frontend), backend \(endpoints.backend))")
            ending = await firstResult(
                of: [
                    // gracefulShutdown throws only when cancelled: the group is over, nil is not read.
                    { () async -> Ending? in (try? await gracefulShutdown()).map { .stopped } },
                    { () async -> Ending? in
                        await tally.waitForLimit()
                        return Task.isCancelled ? nil : .stopped
                    },
                    refusal,
                ], otherwise: Ending.stopped)
        }
        requests.cancel()
        handling.cancel()
        await handling.value
        let stats = await bus.close()
        if ending == .refused {
            logLine(
                .error, "reply", refusedKeyMessage(
                    "reply", role: "responder", curveSecret: endpoints.curve.curveSecret, stats: stats,
                    allowFolders: "--allow-publishers and --allow-subscribers folders (a responder subscribes and posts)"))
            throw ExitCode(2)
        }
        // What went wrong, as a warning in the log; then the summary, not a log line, the last
        // line on stderr (docs/command-line.md).
        if let warning = tally.warning(requests.stats) { logLine(.warning, "reply", warning) }
        tally.summary(requests.stats).write(CommandSummary.format(output: command.format, log: command.logging.logFormat))
    }
}

extension ReplyCommand {
    /// `run(_:for:)` within `timeout`: a command still running then is stopped (Subprocess ends it
    /// when its task is cancelled) and the reply says so, so one stuck command cannot hold every
    /// later request.
    static func run(_ command: String, for request: BusNotification, timeout: Duration) async -> Reply {
        await withTaskGroup(of: Reply?.self) { group in
            group.addTask { await run(command, for: request) }
            group.addTask {
                // Cancelled when the command answered first: the group is over, nil is not read.
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next()
            group.cancelAll()
            if case .some(.some(let reply)) = first { return reply }
            if Task.isCancelled { return .error("the responder is stopping; the command was stopped") }
            return .error("the command did not finish within \(timeout) (--command-timeout)")
        }
    }

    /// Runs `command` for `request`: payload in, reply out, headers in the environment.
    static func run(_ command: String, for request: BusNotification) async -> Reply {
        var environment: [Environment.Key: String] = ["NBUS_NAME": request.name.rawValue]
        for (key, value) in request.headers {
            let variable = "NBUS_HEADER_" + key.uppercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
            environment[Environment.Key(stringLiteral: variable)] = value
        }
        do {
            // The payload comes from an unlinked temporary file, not a pipe: a command that never
            // reads its input (or exits first) then costs nothing, where a pipe would fail the
            // write (or raise SIGPIPE) and hide the command's own exit status and reason.
            let payloadFile = try FileDescriptor.unlinkedTemporaryFile(holding: request.payload)
            // A session of its own, so that stopping it (--command-timeout cancels this task)
            // reaches what the shell started too (`sleep`, a pipeline), not the shell alone.
            var platformOptions = PlatformOptions()
            platformOptions.createSession = true
            platformOptions.teardownSequence = [.gracefulShutDown(toProcessGroup: true, allowedDurationToNextStep: .milliseconds(500))]
            let result = try await Subprocess.run(
                .path("/bin/sh"), arguments: ["-c", command], environment: .inherit.updating(environment),
                platformOptions: platformOptions,
                input: .fileDescriptor(payloadFile, closeAfterSpawningProcess: true),
                output: .bytes(limit: WireFormat.defaultMaximumPayload), error: .string(limit: 4_096))
            if case .exited(0) = result.terminationStatus { return Reply(payload: result.standardOutput) }
            let reason = result.standardError.trimmingCharacters(in: .whitespacesAndNewlines)
            return .error(reason.isEmpty ? "the command ended with \(result.terminationStatus)" : reason)
        } catch {
            return .error("the command could not run: \(error)")
        }
    }
}

extension FileDescriptor {
    /// A file under the temporary folder holding `bytes`, already unlinked, positioned at its start.
    static func unlinkedTemporaryFile(holding bytes: [UInt8]) throws -> FileDescriptor {
        var template = Array((NSTemporaryDirectory() + "/nbus-reply-XXXXXX").utf8CString)
        let raw = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map { mkstemp($0) } ?? -1 }
        guard raw >= 0 else { throw Errno(rawValue: errno) }
        let file = FileDescriptor(rawValue: raw)
        template.withUnsafeBufferPointer { buffer in _ = buffer.baseAddress.map { unlink($0) } }
        do {
            _ = try file.writeAll(bytes)
            _ = try file.seek(offset: 0, from: .start)
        } catch {
            // The write's error is the one to report; a failing close of an unlinked file loses
            // nothing more.
            try? file.close()
            throw error
        }
        return file
    }
}

/// What `nbus reply` did with the requests it took: replied (ok or error), replies not sent,
/// requests ignored; and a wait for `limit` of them handled.
private final class ReplyTally: Sendable {
    /// Replies waiting for their requester's subscription at once, at most (as `Bus.respond`).
    static let concurrentReplies = 256

    private struct Counts {
        var ok = 0
        var error = 0
        var notSent = 0
        var ignored = 0
        var handled: Int { ok + error + notSent }
    }

    private let counts = Mutex(Counts())
    private let limit: Int?
    private let reached = OneShot<Void>()

    init(limit: Int?) {
        self.limit = limit
    }

    func replied(isError: Bool) {
        count { if isError { $0.error += 1 } else { $0.ok += 1 } }
    }

    func notSent() {
        count { $0.notSent += 1 }
    }

    func ignored() {
        counts.withLock { $0.ignored += 1 }
    }

    /// Counts a request handled (a reply sent or given up), and says when `limit` is reached.
    private func count(_ change: (inout Counts) -> Void) {
        let handled = counts.withLock { counts in
            change(&counts)
            return counts.handled
        }
        if let limit, handled >= limit { reached.finish() }
    }

    /// Returns once `limit` requests were handled, or the task is cancelled (the signal ended the
    /// group); without a limit, only then.
    func waitForLimit() async {
        guard limit != nil else {
            // The sleep throws only when cancelled, which the loop's condition then sees.
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            return
        }
        _ = await reached.value
    }

    /// The last line: what came and what became of it, as broker, publish and subscribe end.
    /// Unanswered: requests taken but neither replied to, given up nor ignored (dropped from a
    /// full buffer, or still queued or being answered when the responder stopped).
    /// Replies not sent or requests unanswered, said as a warning before the summary; nil when
    /// every request was answered.
    func warning(_ stats: SubscriptionStats) -> String? {
        let counts = counts.withLock { $0 }
        let unanswered = max(0, Int(clamping: stats.received) - counts.handled - counts.ignored)
        guard counts.notSent > 0 || unanswered > 0 else { return nil }
        return "\(counts.notSent) reply(ies) not sent (the requester's subscription did not come), "
            + "\(unanswered) request(s) unanswered (dropped from a full buffer, or still queued at the stop)"
    }

    func summary(_ stats: SubscriptionStats) -> CommandSummary {
        let counts = counts.withLock { $0 }
        let received = Int(clamping: stats.received)
        let unanswered = max(0, received - counts.handled - counts.ignored)
        let text = "received \(received) request(s): replied \(counts.ok + counts.error) (ok \(counts.ok), error \(counts.error)), "
            + "not sent \(counts.notSent), ignored \(counts.ignored) without a reply-to, unanswered \(unanswered)"
        return CommandSummary(
            command: "reply", text: text,
            fields: [
                ("received", .integer(Int64(received))), ("replied", .integer(Int64(counts.ok + counts.error))),
                ("ok", .integer(Int64(counts.ok))), ("error", .integer(Int64(counts.error))),
                ("notSent", .integer(Int64(counts.notSent))), ("ignored", .integer(Int64(counts.ignored))),
                ("unanswered", .integer(Int64(unanswered))),
            ])
    }
}
