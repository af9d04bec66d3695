import Logging
import NBP1
import ZeroMQ

/// What a bus logs on its own (`BusConfiguration.logger`, debug level): connections made and lost,
/// failed handshakes, rejected frames. A kind that repeats (a client retrying a refused handshake
/// every 100 ms, a peer sending garbage) is logged at once, then at most every 10 s with the
/// count since, and what is held back is logged at close: a retrying peer cannot flood the log.
struct BusLog {
    private let logger: Logger?
    /// Whether anything is logged at all, decided once: the hot path checks only this.
    let enabled: Bool
    private var handshakeFailuresHeld: UInt64 = 0
    private var lastHandshakeFailure: HandshakeFailure?
    private var lastHandshakeLog: UInt64?
    private var rejectionsLogged: UInt64 = 0
    private var lastRejections: [RejectionReason: UInt64] = [:]
    private var lastRejectionLog: UInt64?

    /// How long a repeated kind is held back (nanoseconds).
    static let repeatNanoseconds: UInt64 = 10_000_000_000

    init(_ logger: Logger?) {
        self.logger = logger
        enabled = logger.map { $0.logLevel <= .debug } ?? false
    }

    /// A connecting socket reached its peer or lost it, or a binding one accepted a connection or
    /// lost one; each is rare (one per connection).
    func connection(_ event: ConnectionEvent) {
        guard enabled, let logger else { return }
        var metadata: Logger.Metadata = ["endpoint": "\(event.endpoint)", "side": "\(event.isPublisher ? "publisher" : "subscriber")"]
        if event.acceptedHere {
            metadata["open"] = .stringConvertible(event.open)
            logger.debug(event.connected ? "bus accepted a connection" : "a connection to the bus ended", metadata: metadata)
        } else if event.connected {
            logger.debug("bus connected", metadata: metadata)
        } else {
            logger.debug("bus lost a connection; libzmq reconnects", metadata: metadata)
        }
    }

    /// A publisher with several brokers gave up on one for now (rare: once per stall).
    func pathParked(endpoint: String, stalledFor nanoseconds: UInt64) {
        guard enabled, let logger else { return }
        logger.debug(
            "a broker refused sends; sending on through the others",
            metadata: ["endpoint": "\(endpoint)", "stalledMilliseconds": "\(nanoseconds / 1_000_000)"])
    }

    /// Failed handshakes just read from the monitors.
    mutating func handshakeFailures(_ failures: [HandshakeFailure], now: UInt64) {
        guard enabled, let last = failures.last else { return }
        handshakeFailuresHeld += UInt64(failures.count)
        lastHandshakeFailure = last
        if let logged = lastHandshakeLog, now &- logged < Self.repeatNanoseconds { return }
        logHandshakeFailures(now: now)
    }

    private mutating func logHandshakeFailures(now: UInt64) {
        guard let logger, handshakeFailuresHeld > 0, let last = lastHandshakeFailure else { return }
        logger.debug("bus handshake failed", metadata: ["failures": .stringConvertible(handshakeFailuresHeld), "last": "\(last)"])
        handshakeFailuresHeld = 0
        lastHandshakeLog = now
    }

    /// The receiver's rejection counts (cumulative, by reason), looked at after each round.
    mutating func rejections(_ rejected: [RejectionReason: UInt64], now: UInt64) {
        guard enabled, !rejected.isEmpty else { return }
        lastRejections = rejected
        if let logged = lastRejectionLog, now &- logged < Self.repeatNanoseconds { return }
        logRejections(now: now)
    }

    private mutating func logRejections(now: UInt64) {
        guard let logger else { return }
        let total = lastRejections.values.reduce(0, +)
        guard total > rejectionsLogged else { return }
        var metadata: Logger.Metadata = ["rejected": .stringConvertible(total - rejectionsLogged), "total": .stringConvertible(total)]
        for (reason, count) in lastRejections { metadata["reason.\(reason)"] = .stringConvertible(count) }
        logger.debug("bus rejected frames that break NBP/1", metadata: metadata)
        rejectionsLogged = total
        lastRejectionLog = now
    }

    /// At close: what was held back.
    mutating func flush(now: UInt64) {
        guard enabled else { return }
        logHandshakeFailures(now: now)
        logRejections(now: now)
    }
}
