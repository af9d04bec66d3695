import Logging
import NotificationBus
import ServiceLifecycle

/// Says in the log when a bus cannot reach what it connects to, which libzmq never reports (it
/// retries in silence): a warning once the connections have not all been up for `patience` (a
/// broker not running, a wrong endpoint, a firewall), then a notice when they are. Silent while
/// all is well. Reads `bus.stats.connectedEndpoints` four times a second until graceful shutdown.
public struct ConnectionWatchService: Service, CustomStringConvertible {
    /// The bus watched.
    public let bus: Bus
    /// The tcp and ipc endpoints it connects to (what `BusStats.connectedEndpoints` counts).
    public let endpoints: [String]
    private let logger: Logger
    private let patience: Duration

    /// Watches `bus`'s connections to `endpoints`, warning after `patience` without them.
    public init(bus: Bus, endpoints: [String], logger: Logger, patience: Duration = .seconds(3)) {
        self.bus = bus
        self.endpoints = endpoints
        self.logger = logger
        self.patience = patience
    }

    public var description: String { "ConnectionWatchService" }

    /// Runs until graceful shutdown, also with nothing to watch: a service that returns early
    /// would end a group that treats a finished service as its end.
    public func run() async throws {
        guard !endpoints.isEmpty else {
            // Throws only CancellationError: the group is ending this service either way.
            try? await gracefulShutdown()
            return
        }
        let (bus, logger, expected, patience) = (self.bus, self.logger, endpoints.count, self.patience)
        let list = endpoints.joined(separator: ", ")
        // What it throws is the CancellationError of the sleep below when the shutdown (or the
        // group) cancels the watch: the end this service is waiting for, not a failure.
        try? await cancelWhenGracefulShutdown {
            let clock = ContinuousClock()
            var machine = ConnectionWatch(expected: expected, patience: patience, startedAt: clock.now)
            while !Task.isCancelled {
                try await Task.sleep(for: .milliseconds(250))
                switch machine.observe(connected: bus.stats.connectedEndpoints, at: clock.now) {
                case .none: break
                case .warnNeverConnected(let after):
                    logger.warning(
                        "not connected to \(list) after \(ConnectionWatch.seconds(after)) s: is nbus broker (or the peer that binds there) running and reachable? libzmq keeps trying",
                        metadata: ["endpoints": "\(list)"])
                case .warnLost(let after):
                    logger.warning(
                        "the connection to \(list) has been down for \(ConnectionWatch.seconds(after)) s; libzmq keeps trying",
                        metadata: ["endpoints": "\(list)"])
                case .noticeConnected(let after):
                    logger.notice(
                        "connected to \(list) after \(ConnectionWatch.seconds(after)) s", metadata: ["endpoints": "\(list)"])
                }
            }
        }
    }
}

/// The decisions of `ConnectionWatchService`, clock as input: when to warn and when to say the
/// connections are back, at most once each per outage.
struct ConnectionWatch {
    enum Action: Equatable {
        case none
        /// Never connected since the start, for this long.
        case warnNeverConnected(after: Duration)
        /// Connected before, down for this long.
        case warnLost(after: Duration)
        /// Up again (or at last) after a warning, this long after the outage began.
        case noticeConnected(after: Duration)
    }

    private let expected: Int
    private let patience: Duration
    private var downSince: ContinuousClock.Instant?
    private var everConnected = false
    private var warned = false

    init(expected: Int, patience: Duration, startedAt: ContinuousClock.Instant) {
        self.expected = expected
        self.patience = patience
        downSince = startedAt
    }

    mutating func observe(connected: Int, at now: ContinuousClock.Instant) -> Action {
        if connected >= expected {
            defer { (downSince, warned, everConnected) = (nil, false, true) }
            guard warned, let since = downSince else { return .none }
            return .noticeConnected(after: now - since)
        }
        guard let since = downSince else {
            downSince = now
            return .none
        }
        guard !warned, now - since >= patience else { return .none }
        warned = true
        return everConnected ? .warnLost(after: now - since) : .warnNeverConnected(after: now - since)
    }

    /// `duration` in seconds with one decimal, for the messages.
    static func seconds(_ duration: Duration) -> String {
        String((Timestamps.seconds(duration) * 10).rounded() / 10)
    }
}
