import ZeroMQ

/// CURVE for a bus whose sockets connect (to `nbus broker`, or to a binding peer): its own long-term
/// key pair and the server's public key. The server must admit this bus's public key.
public struct CurveClientSecurity: Sendable, Equatable {
    /// This client's key pair; the server sees (and checks) its public key.
    public let keyPair: CurveKeyPair
    /// The server's public key (Z85): a client only talks to the server holding its secret half.
    public let serverPublicKey: String

    /// Checks that `serverPublicKey` is 40 Z85 characters.
    public init(keyPair: CurveKeyPair, serverPublicKey: String) throws(CurveKeyError) {
        guard CurveKeyPair.isValidKey(serverPublicKey) else { throw .invalidKey(name: "the server public key") }
        self.keyPair = keyPair
        self.serverPublicKey = serverPublicKey
    }
}

/// CURVE for a bus whose sockets bind (the direct topology): its key pair, and the clients it admits.
public struct CurveServerSecurity: Sendable {
    /// This server's key pair; clients need its public key.
    public let keyPair: CurveKeyPair
    /// The clients admitted. Nil admits any client that knows this server's public key: encrypted,
    /// but not authenticated, since a public key is public.
    public let allowedClients: CurveAllowList?
    /// Called (on the bus's authentication thread) for admitted and refused clients, rate-limited per key.
    public let onAuthentication: (@Sendable (AuthenticationEvent) -> Void)?

    /// A server that admits `allowedClients` (nil: any client knowing the server key).
    public init(
        keyPair: CurveKeyPair, allowedClients: CurveAllowList?,
        onAuthentication: (@Sendable (AuthenticationEvent) -> Void)? = nil
    ) {
        self.keyPair = keyPair
        self.allowedClients = allowedClients
        self.onAuthentication = onAuthentication
    }
}
