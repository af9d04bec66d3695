import NotificationBus

/// A `bound` line: the endpoint a binding child listens on (the real port for `tcp://...:*`).
struct BoundLine: Decodable, Sendable {
    var event: String
    var endpoint: String
}
