#if canImport(Glibc)
import Glibc
#endif

extension Socket {
    /// How long `rebind` retries a bind that finds its address still in use, by default.
    public static let defaultRebindRetryLimit = Duration.seconds(2)

    /// Binds `endpoint`, retrying every 10 ms while the address is in use, for up to `limit`.
    ///
    /// The retry rule (one for every re-bind in the package, the broker's and a binding bus's):
    /// only `addressInUse` is retried, and only for a bounded time; any other error is thrown at
    /// once. The one transient failure expected is the old listener of the same address: libzmq
    /// closes an unbound listener later, on its I/O thread, and until it has the port (or the
    /// ipc path, see `bind`) is still taken. Anything else (a permission, a missing folder, a
    /// context that is ending, an endpoint that never was valid) will not change by waiting: a
    /// retry would only hold the calling thread (an event loop that also serves every other
    /// connection) for `limit` and then report the same thing, later. And an address still taken
    /// after `limit` is taken by someone else: that is reported too, rather than waited on for ever.
    public func bind(_ endpoint: String, retryingWhileInUseFor limit: Duration) throws(ZMQError) {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: limit)
        while true {
            do {
                try bind(endpoint)
                return
            } catch where error.kind == .addressInUse && clock.now < deadline {
                // No event says when libzmq's I/O thread has closed the old listener: look again.
                usleep(10_000)
            }
        }
    }

    /// Ends every connection accepted on the bound `endpoint` (libzmq closes a listener's
    /// connections with it) and listens there again: unbinds it, calls `afterUnbinding` (the
    /// connections are gone, none of the new listener's has come yet), then binds it with
    /// `bind(_:retryingWhileInUseFor:)`.
    ///
    /// Throws the unbind's error (nothing changed), or the bind's: then the socket no longer
    /// listens on `endpoint`, and the caller must say so loudly.
    public func rebind(
        _ endpoint: String, retryingWhileInUseFor limit: Duration = defaultRebindRetryLimit,
        afterUnbinding: () -> Void = {}
    ) throws(ZMQError) {
        try unbind(endpoint)
        afterUnbinding()
        try bind(endpoint, retryingWhileInUseFor: limit)
    }
}
