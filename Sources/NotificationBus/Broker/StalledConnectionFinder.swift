import ZeroMQ

/// One subscriber connection as the broker sees it while it waits for room: what it holds unsent,
/// and a counter that moves whenever its peer takes anything (over TCP the bytes the peer
/// acknowledged; over ipc the peer process's CPU time; nil when neither can be read).
struct ConnectionSample: Hashable {
    var unsentBytes: Int
    var progress: UInt64?
    /// Over TCP, the bytes its peer acknowledged (the same counter as `progress`); nil over ipc.
    var acknowledged: UInt64? = nil
    /// The connection's kernel send buffer (`SO_SNDBUF`), when read.
    var sendBuffer: Int? = nil

    /// Whether its kernel queue is drained: empty, or over TCP at most a quarter of its buffer
    /// (the kernel takes more then, so libzmq is writing out what it holds). Over ipc only empty
    /// counts: a unix socket's queue is counted with the kernel's overhead and drains in a few
    /// large steps.
    var drained: Bool {
        unsentBytes == 0 || (acknowledged != nil && sendBuffer.map { unsentBytes <= $0 / 4 } ?? false)
    }
}

/// Which subscriber connections made no progress at all while the broker waited for room.
///
/// Their unsent bytes cannot tell: a peer that reads is refilled by libzmq at once, so a queue at
/// its cap looks the same whether the peer took a megabyte meanwhile or nothing. The progress
/// counter can: a connection is stalled when it holds unsent bytes and its counter stands where it
/// stood when the wait began. One whose counter cannot be read is never called stalled (the broker
/// then sends past the full ones, as without this).
///
/// Socket-free: the loop samples the connections and asks.
struct StalledConnectionFinder {
    private var baseline: [ConnectionDescriptor: ConnectionSample] = [:]

    /// The wait began: remember each connection's sample.
    mutating func begin(_ samples: [ConnectionDescriptor: ConnectionSample]) {
        baseline = samples
    }

    /// The connections that hold unsent bytes and whose progress counter has not moved.
    func stalled(_ samples: [ConnectionDescriptor: ConnectionSample]) -> [ConnectionDescriptor] {
        samples.compactMap { descriptor, sample in
            guard sample.unsentBytes > 0, let progress = sample.progress,
                let before = baseline[descriptor]?.progress, before == progress
            else { return nil }
            return descriptor
        }.sorted { $0.rawValue < $1.rawValue }
    }

    /// The connections that hold unsent bytes and whose progress counter has moved: slow but
    /// taking something.
    func moving(_ samples: [ConnectionDescriptor: ConnectionSample]) -> [ConnectionDescriptor] {
        samples.compactMap { descriptor, sample in
            guard sample.unsentBytes > 0, let progress = sample.progress,
                let before = baseline[descriptor]?.progress, before != progress
            else { return nil }
            return descriptor
        }.sorted { $0.rawValue < $1.rawValue }
    }
}
