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

struct ReplyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reply",
        abstract: "Answer requests matching PATTERN through a broker, until SIGINT or SIGTERM.",
        discussion: """
            --echo answers each request with its own payload. --command runs CMD with /bin/sh -c \
            for each request (one at a time): the request's payload on its standard input, the \
            reply from its standard output (at most 1 MiB); the request's name in NBUS_NAME and \
            each header in NBUS_HEADER_<KEY> (upper case, - and . as _; of two keys with one \
            variable, the first in key order is passed and the other said in a warning). A command that exits \
            non-zero is answered with status error and its standard error as the reason. \
            Requests without a reply-to header are ignored. Each reply is posted once the \
            requester's subscription to its reply name has reached this responder (at most 5 s: \
            a requester gone by then gets none). Logs one line per request on standard error \
            (--log-level, --log-format), and on SIGINT, SIGTERM or --count a summary: requests \
            received, replied (ok, error), not sent, ignored, unanswered.

            Exit status: 0 stopped by a signal or after --count, 2 an unusable endpoint or --http \
            address, or a key the broker refused (or CURVE on one side only), 64 bad arguments.

            Example (with nbus broker running): nbus reply 'text.*' --command 'tr a-z A-Z'
            then nbus request text.upper shout   (prints SHOUT)
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

    @OptionGroup var tracing: TracingOptions

    func validate() throws {
        guard echo != (command != nil) else { throw ValidationError("give exactly one of --echo and --command") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        try SecondsOption.check(commandTimeout, "--command-timeout", in: 0.001...SecondsOption.maximumTimeout)
        _ = try parsedPattern()
    }

    func parsedPattern() throws -> NamePattern {
        do { return try NamePattern(pattern) } catch { throw ValidationError("invalid pattern '\(displayed(pattern))': \(error)") }
    }

    func run() async throws {
        logging.bootstrap()
        let requestPattern = try parsedPattern()
        let exporter = tracing.start(command: "reply")
        // Ended before the summary (its last lines go above it), or here on a way out without one.
        LastWords.beforeSummary { await TracingOptions.finish(exporter, command: "reply") }
        try await LastWords.endingPreludes {
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

    /// A header's environment variable: NBUS_HEADER_ and its key in upper case, any character
    /// other than a letter or a digit as `_`.
    static func environmentName(ofHeader key: String) -> String {
        "NBUS_HEADER_" + key.uppercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
    }

    /// Runs `command` for `request`: payload in, reply out, headers in the environment.
    static func run(_ command: String, for request: BusNotification) async -> Reply {
        var environment: [Environment.Key: String] = ["NBUS_NAME": request.name.rawValue]
        var named: [String: String] = [:]
        // In key order, so that of two keys with one variable (a-b and a.b) the same one is kept
        // each time, and the other is said, not dropped silently.
        for (key, value) in request.headers.sorted(by: { $0.key < $1.key }) {
            let variable = Self.environmentName(ofHeader: key)
            if let earlier = named[variable] {
                logLine(.warning, "reply", "\(request.name): headers \(earlier) and \(key) are both \(variable): \(key)'s value is not passed")
                continue
            }
            named[variable] = key
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
