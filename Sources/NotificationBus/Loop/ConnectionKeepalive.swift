import ZeroMQ

/// How a bus or broker notices a peer that went away without closing its TCP connection (a host
/// that lost power or its network, a NAT or firewall that silently dropped an idle flow): TCP
/// keepalive probes, sent and answered by the kernels, never ZMTP heartbeats.
///
/// Why not ZMTP heartbeats: libzmq 4.3 (and its current code) aborts the whole process
/// (`Assertion failed: !_io_error`, stream_engine_base.cpp) when a connection whose input was
/// stopped by back-pressure (a paused consumer, a broker holding for a full subscriber) sees its
/// peer leave and then handles a heartbeat: its own PING timer, or a PING from the peer still
/// buffered, which it answers with a PONG written to a connection already marked broken. Holding
/// input back is how the bus stays lossless, so heartbeats and the lossless default cannot be
/// combined: full test runs aborted that way, in CI too. Keepalive probes never reach libzmq's
/// engine; a connection they find dead is closed by the kernel and reported as an ordinary error.
///
/// What keepalive cannot see: a frozen process on a live host (its kernel answers the probes),
/// and a peer lost while data to it is unacknowledged (probes go only on idle connections; the
/// kernel's retransmissions give up after about 15 minutes). `TCP_USER_TIMEOUT` bounds both for
/// a sender, since Linux 5.11 a receive window that stays closed too; but a closed window is also
/// what a paused consumer shows its sender, so it is a setting of its own,
/// `BusConfiguration.sendStallLimit`, on by default only where the peers are brokers.
package enum ConnectionKeepalive {
    /// The socket options for `interval` (idle time before the first probe, and between probes)
    /// and `timeout` (how long probes may go unanswered), in TCP keepalive's whole seconds, each
    /// rounded up; nil when `interval` is zero (off: the system's default, normally no probes).
    /// A dead peer is dropped about `interval + timeout` after the connection's last traffic.
    package static func options(interval: Duration, timeout: Duration) -> (idle: Int32, probeInterval: Int32, probes: Int32)? {
        guard interval > .zero else { return nil }
        // Linux takes at most 32,767 s for idle and interval, and 127 probes: a timeout longer
        // than 127 intervals spaces the probes out instead of being cut short.
        let idle = min(wholeSecondsRoundedUp(interval), 32_767)
        let timeoutSeconds = wholeSecondsRoundedUp(timeout)
        let probeInterval = min(max(idle, (timeoutSeconds + 126) / 127), 32_767)
        let probes = min(max(1, (timeoutSeconds + probeInterval - 1) / probeInterval), 127)
        return (idle, probeInterval, probes)
    }

    /// Applies `options(interval:timeout:)` to `socket`; libzmq hands them to every TCP connection
    /// the socket makes or accepts (ipc connections need none: a local peer that dies is closed
    /// by the kernel at once).
    package static func apply(to socket: Socket, interval: Duration, timeout: Duration) throws(ZMQError) {
        guard let options = options(interval: interval, timeout: timeout) else { return }
        try socket.set(.tcpKeepalive, 1)
        try socket.set(.tcpKeepaliveIdle, options.idle)
        try socket.set(.tcpKeepaliveInterval, options.probeInterval)
        try socket.set(.tcpKeepaliveCount, options.probes)
    }

    private static func wholeSecondsRoundedUp(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        let whole = seconds + (attoseconds > 0 ? 1 : 0)
        return Int32(clamping: max(1, whole))
    }
}
