import ZeroMQ

extension Socket {
    /// Binds an XPUB and returns the resolved endpoint (the real port for `tcp://127.0.0.1:*`).
    func bindResolved(_ endpoint: String) throws -> String {
        try bind(endpoint)
        return try lastEndpoint()
    }
}
