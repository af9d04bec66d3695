/// The monitoring server could not listen (its port taken, an address not on this machine) or
/// stopped serving.
public struct MonitoringServerError: Error, CustomStringConvertible {
    /// Where it was to listen.
    public var address: HTTPListenAddress
    /// What went wrong.
    public var reason: String

    public var description: String { "cannot serve --http \(address): \(reason)" }
}
