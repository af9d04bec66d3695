import Synchronization
import ZeroMQ

/// Counts a broker's accepted connections from its sockets' monitor events, and says when they
/// near the process's limit on open files (each one takes a descriptor; libzmq, refused one,
/// retries accept() at once: 100% CPU and every new client shut out until some leave).
///
/// libzmq cannot refuse one connection or close a chosen one, so this is the bound an operator
/// gets: a count in the reports, a log line at 90% of the limit and when accepting fails, and the
/// limit itself raised to the hard one at start (`Broker.raiseOpenFileLimit`). Fed from the
/// monitor reader's thread (the forwarder's, or the ZAP handler's with CURVE).
final class ConnectionTracker: Sendable {
    /// The monitor events it needs.
    static let events: SocketEvents = [.accepted, .disconnected, .acceptFailed]

    /// Connections open now, and the most at once.
    let open = Atomic<Int>(0)
    let peak = Atomic<Int>(0)
    /// accept() failures (EMFILE and the like).
    let acceptFailures = Atomic<UInt64>(0)
    /// The endpoints this broker listens on: disconnections elsewhere (upstream) are not counted.
    private let listening: Mutex<Set<String>>
    /// Connections at which to warn: 90% of the file limit, less a reserve for the broker itself.
    private let warnAt: Int
    private let limit: Int
    /// Rate limits (monotonic ns of the last line) and whether the warning holds.
    private let logState = Mutex<(warned: Bool, lastAcceptFailureLog: UInt64)>((false, 0))
    private let onEvent: (@Sendable (BrokerEvent) -> Void)?

    init(fileLimit: UInt64?, onEvent: (@Sendable (BrokerEvent) -> Void)?) {
        let usable = Int(clamping: (fileLimit ?? 1_024)) - 64
        limit = max(1, usable)
        warnAt = max(1, limit * 9 / 10)
        listening = Mutex([])
        self.onEvent = onEvent
    }

    /// The endpoints bound (resolved), once known.
    func setListening(_ endpoints: [String]) {
        listening.withLock { $0 = Set(endpoints) }
    }

    func record(_ event: SocketEvent) {
        if event.event.contains(.accepted) {
            let now = open.add(1, ordering: .relaxed).newValue
            var highest = peak.load(ordering: .relaxed)
            while now > highest {
                let (exchanged, original) = peak.compareExchange(expected: highest, desired: now, ordering: .relaxed)
                if exchanged { break }
                highest = original
            }
            let warn = logState.withLock { state -> Bool in
                guard now >= warnAt, !state.warned else { return false }
                state.warned = true
                return true
            }
            if warn { onEvent?(.connectionsNearLimit(open: now, limit: limit)) }
        } else if event.event.contains(.disconnected) {
            guard listening.withLock({ $0.contains(event.endpoint) }) else { return }
            let now = open.subtract(1, ordering: .relaxed).newValue
            if now < 0 { open.store(0, ordering: .relaxed) }
            logState.withLock { state in if now < warnAt * 8 / 9 { state.warned = false } }
        } else if event.event.contains(.acceptFailed) {
            acceptFailures.add(1, ordering: .relaxed)
            let clock = Timestamps.monotonicNanoseconds()
            let log = logState.withLock { state -> Bool in
                guard clock &- state.lastAcceptFailureLog >= 10_000_000_000 || state.lastAcceptFailureLog == 0 else {
                    return false
                }
                state.lastAcceptFailureLog = clock
                return true
            }
            if log {
                onEvent?(.acceptFailing(errno: event.value, open: open.load(ordering: .relaxed), failures: acceptFailures.load(ordering: .relaxed)))
            }
        }
    }
}
