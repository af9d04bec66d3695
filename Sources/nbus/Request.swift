import ArgumentParser
import BusOperations
import Foundation
import ServiceLifecycle
import ToolSupport
import NotificationBus
import Subprocess

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

            Example (with nbus broker and nbus reply 'text.*' --command 'tr a-z A-Z' running):
            nbus request text.upper shout   (prints SHOUT)
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

    @OptionGroup var tracing: TracingOptions

    func validate() throws {
        try SecondsOption.check(timeout, "--timeout", in: 0.001...SecondsOption.maximumTimeout)
        let requestName = try parsedName()
        let headerMap = try parsedHeaders()
        // What the request will carry: these headers, and the reply-to header the bus adds (an
        // inbox name, at its longest here).
        var carried = headerMap
        carried[RequestReply.replyToHeader] = RequestReply.inboxName(requester: .max, number: .max).rawValue
        do {
            _ = try EnvelopeCodec.encodedSize(of: BusNotification(name: requestName, headers: carried))
        } catch {
            throw ValidationError("--header: \(error) (with the reply-to header the request adds)")
        }
    }

    func parsedName() throws -> NotificationName {
        do { return try NotificationName(name) } catch { throw ValidationError("invalid name '\(displayed(name))': \(error)") }
    }

    /// The --header options: a key given twice is an error (a notification has one value per
    /// key), and reply-to is the request's own.
    func parsedHeaders() throws -> NotificationHeaders {
        var result = NotificationHeaders()
        for header in headers {
            guard let equals = header.firstIndex(of: "="), equals != header.startIndex else {
                throw ValidationError("--header takes key=value, got '\(header)'")
            }
            let key = String(header[..<equals])
            let value = String(header[header.index(after: equals)...])
            if key == RequestReply.replyToHeader {
                throw ValidationError("--header \(key): the request sets its own reply-to header (where the reply goes)")
            }
            if let earlier = result[key] {
                throw ValidationError(
                    "--header \(key) is given twice (\(key)=\(earlier) and \(key)=\(value)); a notification has one value per key")
            }
            result[key] = value
        }
        return result
    }

    func run() async throws {
        logging.bootstrap()
        let requestName = try parsedName()
        let headerMap = try parsedHeaders()
        let payloadBytes: [UInt8]
        if payload == "-" {
            // Read before the bus opens: the wait for a slow writer is not the reply's timeout.
            do {
                payloadBytes = try await Self.readStandardInput(limit: Self.standardInputLimit)
            } catch {
                // Known only now, after parsing: said as the usage error it is (status 64), as
                // `validate()` says the others.
                logLine(.error, "request", "nbus request: \((error as? ValidationError)?.message ?? "\(error)")")
                throw ExitCode.validationFailure
            }
        } else {
            payloadBytes = Array(payload.utf8)
        }
        let exporter = tracing.start(command: "request")
        // Ended before the summary (its last lines go above it), or here on a way out without one.
        LastWords.beforeSummary { await TracingOptions.finish(exporter, command: "request") }
        try await LastWords.endingPreludes { try await perform(requestName, headerMap, payloadBytes) }
    }

    /// The request itself: the bus opened, the request and its reply, the summary.
    private func perform(_ requestName: NotificationName, _ headerMap: NotificationHeaders, _ payloadBytes: [UInt8]) async throws {
        let bus: Bus
        do { bus = try Bus(try endpoints.configuration("request")) } catch { throw fail("request", error, code: 2) }
        // --timeout bounds the whole request, the look at the handshakes below included.
        let clock = ContinuousClock()
        let deadline = clock.now + SecondsOption.duration(timeout)
        logLine(.debug, "request", "nbus request: \(requestName) through \(endpoints.frontend) and \(endpoints.backend), up to \(timeout) s")
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
        // comes within a handshake's round trips, so it is waited for a moment, within what is
        // left of --timeout (a request that waited all of it has counted any refusal by then).
        var verdict: HandshakeVerdict = bus.stats.connectedEndpoints >= 2 ? .connected : .nothingThere
        if case .failure = outcome, verdict != .connected {
            let left = max(.zero, min(Self.refusalGrace, deadline - clock.now))
            verdict = await HandshakeVerdict.of(bus, connections: 2, within: left)
        }
        let stats = await bus.close()
        var options = RequestOutcome.Options()
        (options.frontend, options.backend, options.timeout) = (endpoints.frontend, endpoints.backend, timeout)
        options.curveSecret = endpoints.curve.curveSecret
        let ending = RequestOutcome.of(outcome, name: requestName, verdict: verdict, stats: stats, options: options)
        if !ending.standardOutput.isEmpty { FileHandle.standardOutput.write(Data(ending.standardOutput)) }
        try await LastWords.atEnd { try finish("request", ending, format: .text) }
    }
}
