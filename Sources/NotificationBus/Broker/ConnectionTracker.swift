#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ZeroMQ

/// One connection a broker accepted, as its socket monitor and the kernel describe it.
public struct BrokerConnection: Hashable, Sendable {
    /// Which side of the broker the peer connected to.
    public enum Side: String, Hashable, Sendable {
        /// The frontend (XSUB): a publisher, or a downstream broker's upstream link.
        case publisher
        /// The backend (XPUB): a subscriber, or a downstream broker.
        case subscriber
    }

    /// The side the peer connected to.
    public var side: Side
    /// The endpoint it connected to (this broker's listening endpoint).
    public var endpoint: String
    /// The peer's address: `ip:port` over TCP (`[ip]:port` for IPv6); empty over ipc, where the
    /// peer has no address but a process (`processID`).
    public var peerAddress: String
    /// Over ipc: the peer process's id and user id (`SO_PEERCRED`), nil over TCP.
    public var processID: Int32?
    /// Over ipc: the peer process's user id.
    public var userID: UInt32?
    /// With CURVE: the peer's public key (Z85) the ZAP handler admitted it with (matched by pid over
    /// ipc, by IP over TCP).
    public var curveKey: String?
    /// When the broker accepted it: nanoseconds since the Unix epoch.
    public var acceptedAt: UInt64
    /// The connection's file descriptor in the broker (unique among open connections of a side).
    public var fileDescriptor: Int32

    /// A connection record.
    public init(
        side: Side, endpoint: String, peerAddress: String, processID: Int32?, userID: UInt32?, curveKey: String?,
        acceptedAt: UInt64, fileDescriptor: Int32
    ) {
        self.side = side
        self.endpoint = endpoint
        self.peerAddress = peerAddress
        self.processID = processID
        self.userID = userID
        self.curveKey = curveKey
        self.acceptedAt = acceptedAt
        self.fileDescriptor = fileDescriptor
    }
}

/// Counts a broker's accepted connections from its sockets' monitor events, keeps a record of each
/// open one (for `Broker.connections()`), and says when they near the process's limit on open files
/// (each one takes a descriptor; libzmq, refused one, retries accept() at once: 100% CPU and every
/// new client shut out until some leave).
///
/// libzmq cannot refuse one connection or close a chosen one, so this is the bound an operator
/// gets: a count in the reports, a log line at 90% of the limit and when accepting fails, and the
/// limit itself raised to the hard one at start (`Broker.raiseOpenFileLimit`). Fed from the
/// monitor reader's thread (the forwarder's, or the ZAP handler's with CURVE).
///
/// The peer of a record is read from the descriptor when the accepted event is read, not when
/// libzmq accepted it: a peer that has already gone by then shows no address (and, if the kernel
/// already gave its descriptor to a new connection, that one's address). Records are keyed by side
/// and descriptor, because the two sides' events are read from two monitors and a descriptor one
/// side closed may be reused by the other before the first side's disconnection is read.
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

    private struct Key: Hashable {
        var side: BrokerConnection.Side
        var descriptor: Int32
    }

    /// The open connections, and with CURVE the keys admitted before their connection's accepted
    /// event was read (oldest first, per side, with the peer address the ZAP request gave).
    private struct Table {
        var connections: [Key: BrokerConnection] = [:]
        var admitted: [BrokerConnection.Side: [(address: String, key: String)]] = [:]
    }

    private let table = Mutex(Table())
    /// Keys admitted and not yet matched to a connection are bounded (a handshake that never ends).
    private static let admittedLimit = 1_024

    /// The descriptors of frontend connections that ended (upstream links included), in order,
    /// for the forwarder's `PublisherOwnership`; `overflowed` when more ended than it took in
    /// time (it then forgets every owner, as after a memory reset).
    private let closedPublishers = Mutex<(descriptors: [Int32], overflowed: Bool)>(([], false))
    private static let closedPublishersLimit = 65_536

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

    /// The descriptors of one side's open connections, with the peer's process id over ipc.
    func descriptors(side: BrokerConnection.Side) -> [(descriptor: Int32, processID: Int32?)] {
        table.withLock { table in
            table.connections.compactMap { key, connection in key.side == side ? (key.descriptor, connection.processID) : nil }
        }
    }

    /// Every open connection's sample of `side` now (those libzmq already closed are left out):
    /// its unsent bytes and its progress counter (TCP bytes acknowledged, else over ipc its peer
    /// process's CPU time). With `onlyBehind`, the counter is read only for connections holding
    /// unsent bytes (the others have nothing to be behind on; over ipc the counter is a file
    /// read). Shared by the broker's forwarder and a binding bus (`SubscriberBudgetPolicy`).
    func samples(side: BrokerConnection.Side, onlyBehind: Bool = false) -> [ConnectionDescriptor: ConnectionSample] {
        var samples: [ConnectionDescriptor: ConnectionSample] = [:]
        for (descriptor, processID) in descriptors(side: side) {
            let connection = ConnectionDescriptor(descriptor)
            guard let unsent = connection.unsentBytes() else { continue }
            if onlyBehind && unsent == 0 {
                samples[connection] = ConnectionSample(unsentBytes: 0, progress: nil)
                continue
            }
            let acknowledged = connection.bytesAcknowledged()
            let progress = acknowledged ?? processID.flatMap(processCPUTicks)
            samples[connection] = ConnectionSample(
                unsentBytes: unsent, progress: progress, acknowledged: acknowledged,
                sendBuffer: acknowledged == nil ? nil : connection.sendBufferSize())
        }
        return samples
    }

    /// The record of one open connection, if it is known.
    func connection(side: BrokerConnection.Side, descriptor: Int32) -> BrokerConnection? {
        table.withLock { $0.connections[Key(side: side, descriptor: descriptor)] }
    }

    /// The listener of `endpoint` was closed (a memory reset unbinds it) and with it every
    /// connection it had accepted. libzmq ends those without an error, so it reports none of them
    /// disconnected: they are forgotten here, or /connz and the counts would keep them for ever.
    func forgetConnections(acceptedOn endpoint: String) {
        let removed = table.withLock { table -> [BrokerConnection] in
            let keys = table.connections.filter { $0.value.endpoint == endpoint }.map(\.key)
            return keys.compactMap { table.connections.removeValue(forKey: $0) }
        }
        guard !removed.isEmpty else { return }
        for connection in removed { onEvent?(.connectionClosed(connection)) }
        let now = open.subtract(removed.count, ordering: .relaxed).newValue
        if now < 0 { open.store(0, ordering: .relaxed) }
    }

    /// The frontend connections that ended since the last call (their descriptors, in order), and
    /// whether some were lost because nobody asked for a long time.
    func takeClosedPublishers() -> (descriptors: [Int32], overflowed: Bool) {
        closedPublishers.withLock { closed in
            defer { closed = ([], false) }
            return closed
        }
    }

    /// The open connections, oldest first.
    func snapshot() -> [BrokerConnection] {
        table.withLock { Array($0.connections.values) }.sorted {
            ($0.acceptedAt, $0.fileDescriptor) < ($1.acceptedAt, $1.fileDescriptor)
        }
    }

    /// The ZAP handler admitted `key` for a peer at `address` (ZAP's address: the IP over TCP;
    /// over ipc `localhost:UID:GID:PID`). The oldest connection of `side` from that peer without a
    /// key yet gets it; if its accepted event has not been read yet, the key waits for it.
    func admitted(key: String, address: String, side: BrokerConnection.Side) {
        table.withLock { table in
            let candidates = table.connections.filter { $0.key.side == side && $0.value.curveKey == nil }
                .filter { Self.peer($0.value, isAt: address) }
            if let oldest = candidates.min(by: { $0.value.acceptedAt < $1.value.acceptedAt }) {
                table.connections[oldest.key]?.curveKey = key
                return
            }
            var queue = table.admitted[side, default: []]
            if queue.count >= Self.admittedLimit { queue.removeFirst() }
            queue.append((address, key))
            table.admitted[side] = queue
        }
    }

    /// Whether `connection`'s peer is the one ZAP calls `address`. Two connections from one IP
    /// handshaking at once over TCP may swap keys (both were admitted); over ipc the pid tells.
    private static func peer(_ connection: BrokerConnection, isAt address: String) -> Bool {
        if let pid = connection.processID {
            return address.split(separator: ":").last.map { $0 == "\(pid)" } ?? false
        }
        return host(of: connection.peerAddress) == address
    }

    func record(_ event: SocketEvent, side: BrokerConnection.Side) {
        if event.event.contains(.accepted) {
            let now = open.add(1, ordering: .relaxed).newValue
            var highest = peak.load(ordering: .relaxed)
            while now > highest {
                let (exchanged, original) = peak.compareExchange(expected: highest, desired: now, ordering: .relaxed)
                if exchanged { break }
                highest = original
            }
            let descriptor = Int32(bitPattern: event.value)
            let peer = Self.peer(of: descriptor)
            let connection = BrokerConnection(
                side: side, endpoint: event.endpoint, peerAddress: peer.address, processID: peer.processID,
                userID: peer.userID, curveKey: nil, acceptedAt: Timestamps.wallClockNanoseconds(),
                fileDescriptor: descriptor)
            table.withLock { table in
                var connection = connection
                if var queue = table.admitted[side], let index = queue.firstIndex(where: { Self.peer(connection, isAt: $0.address) }) {
                    connection.curveKey = queue.remove(at: index).key
                    table.admitted[side] = queue
                }
                table.connections[Key(side: side, descriptor: descriptor)] = connection
            }
            onEvent?(.connectionAccepted(connection))
            let warn = logState.withLock { state -> Bool in
                guard now >= warnAt, !state.warned else { return false }
                state.warned = true
                return true
            }
            if warn { onEvent?(.connectionsNearLimit(open: now, limit: limit)) }
        } else if event.event.contains(.disconnected) {
            let key = Key(side: side, descriptor: Int32(bitPattern: event.value))
            if side == .publisher {
                closedPublishers.withLock { closed in
                    if closed.descriptors.count >= Self.closedPublishersLimit {
                        closed.descriptors.removeAll()
                        closed.overflowed = true
                    }
                    closed.descriptors.append(key.descriptor)
                }
            }
            let removed = table.withLock { $0.connections.removeValue(forKey: key) }
            if let removed { onEvent?(.connectionClosed(removed)) }
            guard removed != nil || listening.withLock({ $0.contains(event.endpoint) }) else { return }
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

    /// The host part of `ip:port` or `[ip]:port`.
    private static func host(of address: String) -> String {
        guard let colon = address.lastIndex(of: ":") else { return address }
        var host = address[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        return String(host)
    }

    /// The peer of an accepted descriptor: its address over TCP, its process over ipc.
    private static func peer(of descriptor: Int32) -> (address: String, processID: Int32?, userID: UInt32?) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let family = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Int32 in
                getpeername(descriptor, address, &length) == 0 ? Int32(address.pointee.sa_family) : -1
            }
        }
        switch family {
        case AF_INET:
            return withUnsafePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                    var ip = address.pointee.sin_addr
                    return ("\(Self.text(AF_INET, &ip)):\(UInt16(bigEndian: address.pointee.sin_port))", nil, nil)
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    var ip = address.pointee.sin6_addr
                    return ("[\(Self.text(AF_INET6, &ip))]:\(UInt16(bigEndian: address.pointee.sin6_port))", nil, nil)
                }
            }
        case AF_UNIX:
            // struct ucred (pid, uid, gid: three 32-bit fields), which Glibc's module does not export.
            var credentials = [Int32](repeating: 0, count: 3)
            var size = socklen_t(MemoryLayout<Int32>.size * 3)
            let read = credentials.withUnsafeMutableBytes { getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, $0.baseAddress, &size) }
            guard read == 0, size >= 8 else { return ("", nil, nil) }
            return ("", credentials[0], UInt32(bitPattern: credentials[1]))
        default:
            return ("", nil, nil)
        }
    }

    private static func text<Address>(_ family: Int32, _ address: inout Address) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let count = socklen_t(buffer.count)
        let converted = withUnsafeBytes(of: &address) { raw in
            buffer.withUnsafeMutableBufferPointer { inet_ntop(family, raw.baseAddress, $0.baseAddress, count) }
        }
        guard converted != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
