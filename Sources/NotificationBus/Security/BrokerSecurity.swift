import ZeroMQ

/// CURVE for `nbus broker`: the broker's key pair and one allow list per side. The frontend admits
/// only `allowedPublishers`, the backend only `allowedSubscribers`; plaintext peers are refused.
public struct BrokerSecurity: Sendable {
    /// The broker's key pair; publishers and subscribers need its public key.
    public let keyPair: CurveKeyPair
    /// The publishers admitted on the frontend.
    public let allowedPublishers: CurveAllowList
    /// The subscribers admitted on the backend.
    public let allowedSubscribers: CurveAllowList

    /// A broker admitting exactly these publishers and subscribers.
    public init(keyPair: CurveKeyPair, allowedPublishers: CurveAllowList, allowedSubscribers: CurveAllowList) {
        self.keyPair = keyPair
        self.allowedPublishers = allowedPublishers
        self.allowedSubscribers = allowedSubscribers
    }
}
