#if canImport(Glibc)
import Glibc
#endif
import ZeroMQ

/// The memory guard of a bus that binds (`BusConfiguration.maximumResidentMemory`).
extension BusEventLoop {
    // MARK: Memory guard

    /// Past `maximumResidentMemory`, drops every connection of the bound endpoints by re-binding
    /// them (libzmq ends a listener's connections with it), then gives the memory back.
    func checkMemory() {
        guard let limit = configuration.maximumResidentMemory, !sockets.boundEndpoints.isEmpty else { return }
        let now = Timestamps.monotonicNanoseconds()
        guard now >= nextMemoryCheck else { return }
        nextMemoryCheck = now &+ MemoryGuardTiming.checkInterval
        guard let resident = residentMemoryBytes(), resident > limit else { return }
        releaseFreeMemory()
        guard now >= memoryCooldownUntil, let after = residentMemoryBytes(), after > limit else { return }
        memoryCooldownUntil = now &+ MemoryGuardTiming.cooldown
        stats.memoryLimitResets += 1
        for endpoint in sockets.rebindEndpoints() {
            stats.socketErrors += 1
            stats.lastSocketError = "re-binding \(endpoint) after the memory limit: it could not be bound again"
        }
        publishStats()
    }
}
