import ZeroMQ

/// The memory guard of a bus that binds (`BusConfiguration.maximumResidentMemory`): the same
/// machine and re-bind as the broker's (`MemoryGuardStateMachine`, `Socket.rebind`).
extension BusEventLoop {
    // MARK: Memory guard

    /// Past `maximumResidentMemory`, gives freed memory back and, if that is not enough, drops
    /// every connection of the bound endpoints by re-binding them.
    func checkMemory() {
        // Optional chaining: without a limit, not even the clock is read.
        guard !sockets.boundEndpoints.isEmpty, (memoryGuard?.check(now: Timestamps.monotonicNanoseconds()) ?? nil) != nil
        else { return }
        stats.memoryLimitResets += 1
        for (endpoint, error) in sockets.rebindEndpoints() {
            stats.socketErrors += 1
            stats.lastSocketError = "re-binding \(endpoint) after the memory limit: it could not be bound again (\(error))"
        }
        publishStats()
    }
}
