import FlyingFox
import FlyingSocks
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// What a monitoring endpoint answers: a status, a content type and a body.
public struct MonitoringResponse: Sendable {
    /// The HTTP status (200, 503...).
    public var status: Int
    /// The `Content-Type` header.
    public var contentType: String
    /// The body.
    public var body: [UInt8]

    /// A response.
    public init(status: Int = 200, contentType: String, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    /// Plain text, UTF-8.
    public static func text(_ text: String, status: Int = 200) -> MonitoringResponse {
        MonitoringResponse(status: status, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
    }

    /// JSON from an `Encodable` value, keys sorted.
    public static func json(_ value: some Encodable, status: Int = 200) -> MonitoringResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else {
            return .text("could not encode the response\n", status: 500)
        }
        return MonitoringResponse(status: status, contentType: "application/json", body: Array(data) + [0x0A])
    }
}

/// The HTTP server of `--http`: GET endpoints answered by closures, as a `Service` that runs until
/// the group's graceful shutdown. Once it listens it logs `monitoring on http://HOST:PORT` (the
/// real port when 0 was asked for) at info level, with the address as the field `http`.
///
/// FlyingFox serves it: its own non-blocking sockets on Swift concurrency, no SwiftNIO. Each route
/// answers GET and HEAD; anything else on a known path is 405, an unknown path 404.
public struct MonitoringHTTPService: Service, CustomStringConvertible {
    /// A route: path (`/metrics`) and its answer, computed per request.
    public typealias Route = (path: String, answer: @Sendable () async -> MonitoringResponse)

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
        let socketAddress: any FlyingSocks.SocketAddress =
            address.isIPv6
            ? try sockaddr_in6.inet6(ip6: address.host, port: address.port)
            : try sockaddr_in.inet(ip4: address.host, port: address.port)
        let server = HTTPServer(
            config: HTTPServer.Configuration(address: socketAddress, logger: FlyingFoxLogger(logger: logger)))
        for route in routes {
            let answer = route.answer
            await server.appendRoute(HTTPRoute(methods: [.GET, .HEAD], path: route.path)) { _ in
                Self.response(await answer())
            }
            await server.appendRoute(HTTPRoute(route.path)) { _ in
                HTTPResponse(statusCode: .methodNotAllowed, headers: [HTTPHeader("Allow"): "GET, HEAD"])
            }
        }
        let logger = self.logger
        let onListening = self.onListening
        let address = self.address
        // Stopping closes the listening socket, and FlyingFox's run() then throws: expected then.
        let stopping = StopFlag()
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        try await server.run()
                    } catch is CancellationError {
                    } catch where stopping.isSet {
                    } catch {
                        throw MonitoringServerError(address: address, reason: "\(error)")
                    }
                }
                group.addTask {
                    try await server.waitUntilListening(timeout: 30)
                    let bound: String
                    switch await server.listeningAddress {
                    case .ip4(let host, let port)?: bound = "\(host):\(port)"
                    case .ip6(let host, let port)?: bound = "[\(host)]:\(port)"
                    default: bound = "?"
                    }
                    logger.info("monitoring on http://\(bound)", metadata: ["http": "\(bound)"])
                    onListening?(bound)
                }
                // The first failure (the port taken) ends the server at once.
                do {
                    while try await group.next() != nil {}
                } catch {
                    group.cancelAll()
                    throw error
                }
            }
        } onGracefulShutdown: {
            stopping.set()
            Task { await server.stop(timeout: 0) }
        }
    }

    private static func response(_ response: MonitoringResponse) -> HTTPResponse {
        HTTPResponse(
            statusCode: HTTPStatusCode(response.status, phrase: phrase(response.status)),
            headers: [.contentType: response.contentType], body: Data(response.body))
    }

    private static func phrase(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        default: return "Status \(status)"
        }
    }
}

/// Set once, read from any task.
private final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .acquiring) }

    func set() { value.store(true, ordering: .releasing) }
}

/// The monitoring server could not listen (its port taken, an address not on this machine) or
/// stopped serving.
public struct MonitoringServerError: Error, CustomStringConvertible {
    /// Where it was to listen.
    public var address: HTTPListenAddress
    /// What went wrong.
    public var reason: String

    public var description: String { "cannot serve --http \(address): \(reason)" }
}

/// FlyingFox's own lines (a connection opened, closed) through swift-log, at trace level: they are
/// per request, and a monitoring server that logs every scrape would drown the rest.
struct FlyingFoxLogger: FlyingSocks.Logging {
    let logger: Logger

    func logDebug(_ debug: @autoclosure () -> String) { logger.trace("\(debug())") }
    func logInfo(_ info: @autoclosure () -> String) { logger.trace("\(info())") }
    func logWarning(_ warning: @autoclosure () -> String) { logger.warning("\(warning())") }
    // Its failures end `run()` with an error that MonitoringHTTPService reports itself, once.
    func logError(_ error: @autoclosure () -> String) { logger.debug("\(error())") }
    func logCritical(_ critical: @autoclosure () -> String) { logger.debug("\(critical())") }
}
