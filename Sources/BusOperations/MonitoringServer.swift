import Foundation
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The HTTP server of `--http`: GET endpoints answered by closures, as a `Service` that runs until
/// the group's graceful shutdown. Once it listens it logs `monitoring on http://HOST:PORT` (the
/// real port when 0 was asked for) at info level, with the address as the field `http`.
///
/// HummingbirdCore over SwiftNIO serves it, on one event loop thread of its own: requests are
/// parsed there, never on Swift's cooperative pool, which the process's signal handling and the
/// bus's async code need (a server that parsed on that pool was pinned by two slow clients, and
/// the process then ignored SIGTERM). Each route answers GET and HEAD; anything else on a known
/// path is 405, an unknown path 404. `GET /`, unless a route claims it, lists the routes.
///
/// The server is for a scraper and an operator's curl, and is bounded for anyone else:
/// - a request head (request line and headers) of at most 8 KiB, a single line at most 4 KiB, at
///   most 64 header fields: past that the answer is 400 and the connection is closed;
/// - a request body of at most 1 KiB (no endpoint reads one): past that the connection is closed;
/// - at most 64 connections at once: one more is closed as soon as it is accepted;
/// - a whole request (head and body) must arrive within 5 s of the connection opening or of the
///   previous response: a client that trickles its headers (slowloris), or sends nothing, or keeps
///   an idle connection, is cut then;
/// - a response must be taken by the client within 10 s;
/// - on graceful shutdown, connections still open 200 ms later are closed, so the server never
///   holds up the process's exit.
public struct MonitoringHTTPService: Service, CustomStringConvertible {
    /// A route: path (`/metrics`) and its answer, computed per request.
    public typealias Route = (path: String, answer: @Sendable () async -> MonitoringResponse)

    /// Connections served at once; one more is closed as soon as it is accepted.
    public static let maximumConnections = 64
    /// The largest request head (request line and header fields), in bytes.
    public static let maximumHeadSize = 8 * 1024
    /// The largest single line of a request head (the URL, one header field), in bytes.
    public static let maximumHeaderLineSize = 4 * 1024
    /// The most header fields in a request.
    public static let maximumHeaderFields = 64
    /// The largest request body read, in bytes; a longer one closes the connection.
    public static let maximumBodySize = 1024
    /// How long a whole request may take to arrive, counted from the connection's opening or the
    /// previous response; also how long an idle connection is kept.
    public static let requestTimeout: Duration = .seconds(5)
    /// How long a client may take to read a response.
    public static let responseTimeout: Duration = .seconds(10)
    /// How long connections may still finish their responses after a graceful shutdown begins.
    public static let shutdownGrace: Duration = .milliseconds(200)

    private let address: HTTPListenAddress
    private let routes: [Route]
    private let logger: Logger
    private let onListening: (@Sendable (String) -> Void)?

    /// A server for `routes` on `address`; `onListening` hears the bound `HOST:PORT`.
    public init(
        address: HTTPListenAddress, routes: [Route], logger: Logger, onListening: (@Sendable (String) -> Void)? = nil
    ) {
        self.address = address
        self.routes = routes
        self.logger = logger
        self.onListening = onListening
    }

    /// `http HOST:PORT`, as the service group's lines name it.
    public var description: String { "http \(address)" }

    public func run() async throws {
        var answers: [String: @Sendable () async -> MonitoringResponse] = [:]
        for route in routes where answers[route.path] == nil { answers[route.path] = route.answer }
        if answers["/"] == nil {
            let index = MonitoringResponse.text(Self.index(paths: routes.map(\.path)))
            answers["/"] = { index }
        }
        let table = answers
        let connections = ConnectionRegistry(limit: Self.maximumConnections)
        var decoder = HTTP1Channel.Configuration.DecoderConfiguration()
        decoder.maxHeaderFieldSize = Self.maximumHeaderLineSize
        decoder.maxHeaderListSize = Self.maximumHeadSize
        decoder.maxHeaderFieldCount = Self.maximumHeaderFields
        let http = HTTP1Channel(
            responder: { request, writer, _ in try await Self.respond(to: request, with: writer, answers: table) },
            configuration: HTTP1Channel.Configuration(
                additionalChannelHandlers: [RequestDeadlineHandler()], httpDecoderConfiguration: decoder))

        // Hummingbird's own lines (listening, shutting down; per connection at debug and trace)
        // only when tracing: the service logs what an operator needs itself.
        var serverLogger = logger
        if serverLogger.logLevel > .trace { serverLogger.logLevel = max(serverLogger.logLevel, .warning) }
        let logger = self.logger
        let onListening = self.onListening
        let address = self.address
        // NIO's shared event loops, never shut down: a server with its own threads shut them down
        // at its end, and whatever its channels still scheduled there (a late close, Hummingbird's
        // own shutdown task) made SwiftNIO print "Cannot schedule tasks on an EventLoop that has
        // already shut down" after the command's summary on a loaded machine, three fixes of the
        // order notwithstanding. A few scrapes a minute cost those threads nothing. NIO's parser is
        // incremental and bounded: a hostile client costs no more than the bytes it sends.
        let threads = MultiThreadedEventLoopGroup.singleton
        let server = Server(
            childChannelSetup: MonitoringChildChannel(http: http, connections: connections),
            configuration: ServerConfiguration(address: .hostname(address.host, port: Int(address.port))),
            onServerRunning: { channel in
                let bound: String
                switch (channel.localAddress?.ipAddress, channel.localAddress?.port) {
                case (let host?, let port?): bound = address.isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
                default: bound = "\(address)"
                }
                logger.info("monitoring on http://\(bound)", metadata: ["http": "\(bound)"])
                onListening?(bound)
            },
            eventLoopGroup: threads,
            logger: serverLogger)
        let stopping = StopFlag()
        // The closing of connections still open after the grace, cancelled if the server ends first.
        let closing = Mutex<Scheduled<Void>?>(nil)
        do {
            try await withGracefulShutdownHandler {
                try await server.run()
            } onGracefulShutdown: {
                stopping.set()
                // The server stops accepting and closes idle connections itself, but waits for
                // requests in progress: one that trickles in would hold the process for seconds.
                closing.withLock {
                    $0 = threads.next().scheduleTask(in: .nanoseconds(Int64(Self.shutdownGrace.nanoseconds))) {
                        connections.closeAll()
                    }
                }
            }
        } catch {
            // The server's own error is the one to report; tidying up after it fails only when
            // already shut down, which leaves nothing more to release.
            try? await server.shutdownGracefully()
            closing.withLock { $0?.cancel() }
            throw MonitoringServerError(address: address, reason: Self.reason(error))
        }
        // A run ended by task cancellation (not by a graceful shutdown) leaves Hummingbird's server
        // holding its listening channel: shut it down (it returns at once if it was already).
        try? await server.shutdownGracefully()
        closing.withLock { $0?.cancel() }
        // Hummingbird returns when its listening socket fails (after logging why at error level):
        // a command whose --http stopped answering ends with the reason, not as if asked to stop.
        if !stopping.isSet && !Task.isCancelled {
            throw MonitoringServerError(address: address, reason: "the server stopped accepting connections")
        }
    }

    /// What each endpoint the nbus commands serve answers, for the index at `/`.
    public static let endpointDescriptions: [String: String] = [
        "/metrics": "Prometheus text format: process_*, nbus_build_info and the nbus_* figures",
        "/healthz": "200 ok while healthy; 503 and the reason otherwise",
        "/varz": "JSON: version, start time, uptime, endpoints, settings, counters",
        "/connz": "JSON: each open connection (side, peer, pid, CURVE key, since)",
        "/subsz": "JSON: the subscriptions subscribers hold (patterns, prefixes)",
        "/retainedz": "JSON: the retained values kept (count, bytes, the first 1,000 names with size and expiry)",
    ]

    /// The index `GET /` answers when no route claims `/`: every path served, one a line, with
    /// what it answers where known.
    static func index(paths: [String]) -> String {
        var seen = Set<String>()
        let listed = (paths + ["/"]).filter { seen.insert($0).inserted }
        let width = listed.map(\.count).max() ?? 0
        var text = "NotificationBus \(NotificationBusVersion.current) monitoring endpoints (GET or HEAD):\n"
        for path in listed {
            let what = path == "/" ? "this list" : endpointDescriptions[path] ?? ""
            text += path.padding(toLength: width + 2, withPad: " ", startingAt: 0) + what + "\n"
        }
        return text
    }

    /// Answers one request from `answers`.
    private static func respond(
        to request: Request, with writer: consuming ResponseWriter,
        answers: [String: @Sendable () async -> MonitoringResponse]
    ) async throws {
        guard let answer = answers[request.uri.path] else {
            try await write(.text("not found\n", status: 404), to: writer, bodyless: request.method == .head)
            return
        }
        guard request.method == .get || request.method == .head else {
            var fields = HTTPFields()
            fields[.allow] = "GET, HEAD"
            fields[.contentLength] = "0"
            try await writer.writeResponse(HTTPResponse(status: .methodNotAllowed, headerFields: fields))
            return
        }
        try await write(await answer(), to: writer, bodyless: request.method == .head)
    }

    private static func write(
        _ response: MonitoringResponse, to writer: consuming ResponseWriter, bodyless: Bool
    ) async throws {
        var fields = HTTPFields()
        fields[.contentType] = response.contentType
        fields[.contentLength] = String(response.body.count)
        let head = HTTPResponse(
            status: HTTPResponse.Status(code: response.status, reasonPhrase: phrase(response.status)), headerFields: fields)
        if bodyless {
            try await writer.writeResponse(head)
        } else {
            try await writer.write(response: head, body: ResponseBody(byteBuffer: ByteBuffer(bytes: response.body)))
        }
    }

    private static func phrase(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 404: return "Not Found"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        default: return "Status \(status)"
        }
    }

    /// What the system said, as `checkListenable()` says it (`Address already in use (errno 98)`).
    private static func reason(_ error: any Error) -> String {
        if let error = error as? IOError {
            return "\(String(cString: strerror(error.errnoCode))) (errno \(error.errnoCode))"
        }
        return "\(error)"
    }
}

/// Set once, read from any task.
private final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .acquiring) }

    func set() { value.store(true, ordering: .releasing) }
}

extension Duration {
    // Internal, not fileprivate: RequestDeadlineHandler.swift uses it too.
    /// The whole duration in nanoseconds.
    var nanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }
}
