import NotificationBus

/// What became of a command's handshakes with the broker (or peer) it connects to, looked at when
/// something it waited for did not come: whether it reached anything at all, and whether a server
/// refused it. `BusStats` has the counters; the bus signals a refusal (`waitForHandshakeRefusal`)
/// but no connection made, so that one is its counter, looked at every 10 ms.
package enum HandshakeVerdict: Sendable, Equatable {
    /// The connections passed their handshakes.
    case connected
    /// A server refused this command's key, or met it with another mechanism (CURVE against
    /// plaintext), or hung up on a run of handshakes: retrying changes nothing.
    case refused
    /// Handshakes failed and not all connections passed one within the time: nothing went through
    /// the ones that did not.
    case failed
    /// Nothing answered: no handshake was even tried (nothing listening there).
    case nothingThere

    /// Whether the server would not have this command: say so, exit 2.
    package var isRefusal: Bool { self == .refused || self == .failed }

    /// Waits up to `limit` for `connections` connected endpoints (`BusStats.connectedEndpoints`)
    /// or a refusal; at the limit, `.failed` when handshakes failed meanwhile, else `.nothingThere`.
    package static func of(_ bus: Bus, connections: Int, within limit: Duration) async -> HandshakeVerdict {
        await firstResult(
            of: [
                // A throw (no refusal within the limit, or the bus closed) is no refusal: nil.
                { (try? await bus.waitForHandshakeRefusal(timeout: limit)) != nil ? .refused : nil },
                {
                    let deadline = ContinuousClock.now + limit
                    while ContinuousClock.now < deadline {
                        if bus.stats.connectedEndpoints >= connections { return .connected }
                        do { try await Task.sleep(for: .milliseconds(10)) } catch { return nil }
                    }
                    let stats = bus.stats
                    if stats.connectedEndpoints >= connections { return .connected }
                    return stats.handshakesFailed + stats.handshakesRefused > 0 ? .failed : .nothingThere
                },
            ], otherwise: .nothingThere)
    }
}
