import Foundation
import NotificationBus
import Prometheus

/// What a broker was started with, for `/varz`.
public struct BrokerDescription: Sendable {
    /// The frontend and backend endpoints, resolved.
    public var frontend: String
    /// The backend endpoint, resolved.
    public var backend: String
    /// Upstream brokers this one connects to.
    public var upstream: [String]
    /// Whether CURVE is on.
    public var curve: Bool
    /// The settings, by name (`hwm`, `slowAfterSeconds`...): numbers, so `/varz` has them as
    /// JSON numbers; one that is not known is left out.
    public var settings: [String: Double]
    /// The broker's memory guard (`BrokerConfiguration.memoryLimit`), in bytes; nil: none. On
    /// `/metrics` as `nbus_broker_memory_limit_bytes`, for an alert before the guard drops
    /// every connection.
    public var memoryLimit: UInt64?

    /// A description.
    public init(
        frontend: String, backend: String, upstream: [String], curve: Bool, settings: [String: Double],
        memoryLimit: UInt64? = nil
    ) {
        self.frontend = frontend
        self.backend = backend
        self.upstream = upstream
        self.curve = curve
        self.settings = settings
        self.memoryLimit = memoryLimit
    }
}
