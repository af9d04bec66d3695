import ZeroMQ

extension Socket {
    /// Binds an XPUB and returns the resolved endpoint (the real port for `tcp://127.0.0.1:*`).
    func bindResolved(_ endpoint: String) throws -> String {
        try bind(endpoint)
        return try lastEndpoint()
    }

    /// Sends `message` every 10 ms, 500 times at most, until `subscriber` has something to read:
    /// for a publisher that cannot tell when a subscription reached it (a PUB, or an XPUB whose
    /// subscription message was already taken). Returns whether anything arrived.
    func sendUntilReadable(_ message: String, at subscriber: Socket) throws -> Bool {
        var poller = Poller()
        poller.register(subscriber)
        for _ in 0..<500 {
            try send(message)
            if try poller.poll(timeoutMilliseconds: 10) > 0 { return true }
        }
        return false
    }
}
