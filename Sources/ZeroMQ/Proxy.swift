import CZeroMQ

/// libzmq's built-in proxy (`zmq_proxy_steerable`): forwards between two sockets, e.g. XSUB <-> XPUB.
public enum Proxy {
    /// Commands a control socket may send to a running proxy.
    public enum Command: String, Sendable, CaseIterable {
        /// Stop forwarding until `resume`.
        case pause = "PAUSE"
        /// Start forwarding again.
        case resume = "RESUME"
        /// Make `run` return.
        case terminate = "TERMINATE"
        /// Reply on the control socket with eight counters (a REP/REQ control pair is needed).
        case statistics = "STATISTICS"
    }

    /// Runs the proxy on the calling thread until `terminate` arrives on `control` (returns normally)
    /// or the context shuts down (throws `.contextTerminated`).
    ///
    /// All sockets must belong to the calling thread. Use a PAIR or REP socket bound to an inproc
    /// endpoint as `control`, and send `Command` strings to it from elsewhere.
    public static func run(
        frontend: Socket, backend: Socket, capture: Socket? = nil, control: Socket? = nil
    ) throws(ZMQError) {
        _ = try zmqCall("zmq_proxy_steerable") {
            zmq_proxy_steerable(frontend.handle, backend.handle, capture?.handle, control?.handle)
        }
    }
}
